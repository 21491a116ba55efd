#include "vmm/vcpu_runner.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {
void IgnoreKick(int) {}
}  // namespace

void InstallKickSignalHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_handler = IgnoreKick;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: KVM_RUN must return EINTR
    sigaction(kKickSignal, &sa, nullptr);
  });
}

void VcpuRunner::Fault(RunEnd end, const std::string& what, bool has_rip) {
  kvm_regs regs{};
  std::string where;
  if (!has_rip && vcpu_.GetRegs(regs).ok()) where = absl::StrCat(" at rip 0x", absl::Hex(regs.rip));
  control_.End(end, absl::StrCat("vCPU ", vcpu_.index(), ": ", what, where, "; VM stopped"));
}

void VcpuRunner::Kick() {
  vcpu_.run_state()->immediate_exit = 1;
  absl::MutexLock lock(&thread_mu_);
  if (thread_) pthread_kill(*thread_, kKickSignal);
}

void VcpuRunner::Run() {
  {
    absl::MutexLock lock(&thread_mu_);
    thread_ = pthread_self();
  }
  RunLoop();
  absl::MutexLock lock(&thread_mu_);
  thread_.reset();
}

void VcpuRunner::RunLoop() {
  tid_.store(static_cast<pid_t>(::syscall(SYS_gettid)), std::memory_order_release);
  sigset_t kick;
  sigemptyset(&kick);
  sigaddset(&kick, kKickSignal);
  pthread_sigmask(SIG_UNBLOCK, &kick, nullptr);
  if (observer_ != nullptr) observer_->OnVcpuThreadStart(vcpu_.index(), tid());

  while (!control_.stopping()) {
    VcpuExit exit = vcpu_.Run();
    switch (exit.kind) {
      case VcpuExit::kIo: {
        if (!exit.is_write || exit.count != 1) {
          Fault(RunEnd::kGuestFault, absl::StrCat("unsupported ", DescribeExit(exit)));
          return;
        }
        GuestChannel::Reply reply =
            channel_.HandleOut(vcpu_.index(), exit.port, exit.size, exit.value);
        switch (reply.kind) {
          case GuestChannel::Reply::kContinue:
            break;
          case GuestChannel::Reply::kSleep:
            control_.Sleep(reply.sleep);
            break;
          case GuestChannel::Reply::kExit:
            control_.VcpuExited(reply.exit_status);
            return;
          case GuestChannel::Reply::kFault:
            Fault(RunEnd::kGuestFault, reply.fault, reply.fault_has_rip);
            return;
        }
        break;
      }
      case VcpuExit::kInterrupted:
        break;  // a kick: the loop condition decides
      case VcpuExit::kDirtyRingFull:
        if (on_ring_full_) on_ring_full_(vcpu_.index());
        break;
      case VcpuExit::kMmio:
      case VcpuExit::kShutdown:
      case VcpuExit::kInternalError:  // e.g. an access KVM cannot emulate
        Fault(RunEnd::kGuestFault, DescribeExit(exit));
        return;
      case VcpuExit::kHalt:
        Fault(RunEnd::kGuestFault, "halted with interrupts disabled (it can never wake)");
        return;
      case VcpuExit::kFailEntry:
      case VcpuExit::kFailed:
      case VcpuExit::kOther:
        Fault(RunEnd::kError, DescribeExit(exit));
        return;
    }
  }
}

}  // namespace numavm
