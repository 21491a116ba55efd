#include "vmm/vcpu_runner.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "vmm/kvm_compat.h"

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

std::string VcpuRunner::Describe() const {
  return absl::StrCat("vCPU ", vcpu_.index(), ": ", exits_.load(), " exits, ",
                      fault_retries_.load(), " EFAULTs retried after page moves, ",
                      probe_faults_.load(), " on sampler probes",
                      exited_.load() ? ", exited" : ", not exited");
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
    const uint64_t fence_before = fence_ != nullptr ? fence_->sequence() : 0;
    VcpuExit exit = vcpu_.Run();
    exits_.fetch_add(1, std::memory_order_relaxed);
    if (exit.kind != VcpuExit::kMemoryFault) faults_in_a_row_ = 0;
    switch (exit.kind) {
      case VcpuExit::kIo:
        if (!Io(exit)) return;
        break;
      case VcpuExit::kMmio:
        if (!Mmio(exit)) return;
        break;
      case VcpuExit::kInterrupted:
        break;  // a kick: the loop condition decides
      case VcpuExit::kDirtyRingFull:
        if (on_ring_full_) on_ring_full_(vcpu_.index());
        break;
      case VcpuExit::kInternalError:  // e.g. an access KVM cannot emulate
        // ... such as one whose memory a page move or a sampler's probe
        // had taken away for a moment: the instruction was not executed;
        // enter again.
        if (exit.value == KVM_INTERNAL_ERROR_EMULATION && on_memory_fault_ &&
            on_memory_fault_(vcpu_.index(), std::nullopt)) {
          break;
        }
        if (exit.value == KVM_INTERNAL_ERROR_EMULATION && fence_ != nullptr &&
            fence_->RetryAfterFault(fence_before)) {
          break;
        }
        Fault(RunEnd::kGuestFault, DescribeExit(exit));
        return;
      case VcpuExit::kShutdown:
        Fault(RunEnd::kGuestFault, DescribeExit(exit));
        return;
      case VcpuExit::kHalt:
        Fault(RunEnd::kGuestFault, "halted with interrupts disabled (it can never wake)");
        return;
      case VcpuExit::kMemoryFault:
        // A sampler's probe (its sample taken, the page given back), or
        // guest memory a page move had taken away for a moment: enter again.
        if (on_memory_fault_ &&
            on_memory_fault_(vcpu_.index(), exit.reason == kKvmExitMemoryFault
                                                ? std::optional<uint64_t>(exit.address)
                                                : std::nullopt)) {
          probe_faults_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (fence_ != nullptr && fence_->RetryAfterFault(fence_before)) {
          fault_retries_.fetch_add(1, std::memory_order_relaxed);
          if (++faults_in_a_row_ == kFaultsToReport) {
            std::fprintf(stderr, "numavm: vCPU %d: %s %llu times in a row; still retrying\n",
                         vcpu_.index(), DescribeExit(exit).c_str(),
                         static_cast<unsigned long long>(kFaultsToReport));
          }
          continue;
        }
        Fault(RunEnd::kError, DescribeExit(exit));
        return;
      case VcpuExit::kFailEntry:
      case VcpuExit::kFailed:
      case VcpuExit::kOther:
        Fault(RunEnd::kError, DescribeExit(exit));
        return;
    }
  }
}

bool VcpuRunner::Act(const PortReply& reply) {
  switch (reply.kind) {
    case PortReply::kContinue:
      return true;
    case PortReply::kSleep:
      control_.Sleep(reply.sleep);
      return true;
    case PortReply::kExit:
      exited_.store(true);
      control_.VcpuExited(reply.exit_status);
      return false;
    case PortReply::kFault:
      Fault(RunEnd::kGuestFault, reply.fault, reply.fault_has_rip);
      return false;
    case PortReply::kEnd:
      control_.End(reply.end, reply.fault);
      return false;
  }
  return false;
}

bool VcpuRunner::Io(const VcpuExit& exit) {
  kvm_run* run = vcpu_.run_state();
  auto* data = reinterpret_cast<uint8_t*>(run) + run->io.data_offset;
  const uint8_t size = exit.size;
  if (size != 1 && size != 2 && size != 4) {
    Fault(RunEnd::kGuestFault, absl::StrCat("unsupported ", DescribeExit(exit)));
    return false;
  }
  for (uint32_t i = 0; i < exit.count; ++i) {
    uint8_t* element = data + static_cast<size_t>(i) * size;
    if (exit.is_write) {
      uint64_t value = 0;
      std::memcpy(&value, element, size);
      if (!Act(devices_.Out(vcpu_.index(), exit.port, size, value))) return false;
    } else {
      const PortReply reply = devices_.In(vcpu_.index(), exit.port, size);
      std::memcpy(element, &reply.value, size);
      if (!Act(reply)) return false;
    }
  }
  return true;
}

bool VcpuRunner::Mmio(const VcpuExit& exit) {
  kvm_run* run = vcpu_.run_state();
  const uint8_t size = std::min<uint8_t>(exit.size, 8);
  uint64_t value = 0;
  if (exit.is_write) std::memcpy(&value, run->mmio.data, size);
  // Guest RAM that KVM's instruction emulator could not reach may be a
  // sampler's probe: its sample is taken and the page given back, and the
  // access is done on it (devices_) before a sampler can arm it again -
  // arming raises the move fence, which waits for this access to end.
  std::optional<MoveFence::Access> access;
  if (on_memory_fault_ && fence_ != nullptr) {
    access.emplace(fence_);
    on_memory_fault_(vcpu_.index(), exit.address);
  }
  const PortReply reply = devices_.Mmio(vcpu_.index(), exit.address, size, exit.is_write, value);
  if (!exit.is_write) std::memcpy(run->mmio.data, &reply.value, size);
  return Act(reply);
}

}  // namespace numavm
