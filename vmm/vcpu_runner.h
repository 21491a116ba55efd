// The exit loop of one vCPU thread: one switch on the exit kind.
#ifndef NUMAVM_VMM_VCPU_RUNNER_H_
#define NUMAVM_VMM_VCPU_RUNNER_H_

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "base/move_fence.h"
#include "vmm/guest_observer.h"
#include "vmm/kvm.h"
#include "vmm/port_devices.h"
#include "vmm/run_control.h"

namespace numavm {

class VcpuRunner final {
 public:
  // `on_ring_full` runs on this thread after KVM_EXIT_DIRTY_RING_FULL. A
  // guest access that fails (EFAULT) while `fence` had a move window open
  // is retried once the window closes (base/move_fence.h); before that,
  // `on_memory_fault` (with the guest-physical address KVM named, if any)
  // may claim it: true, enter again.
  VcpuRunner(VcpuFd& vcpu, PortDevices& devices, RunControl& control, GuestObserver* observer,
             std::function<void(int)> on_ring_full,
             std::function<bool(int, std::optional<uint64_t>)> on_memory_fault, MoveFence* fence)
      : vcpu_(vcpu),
        devices_(devices),
        control_(control),
        observer_(observer),
        on_ring_full_(std::move(on_ring_full)),
        on_memory_fault_(std::move(on_memory_fault)),
        fence_(fence) {}

  // Body of the vCPU thread; returns when the vCPU exits or the run ends.
  void Run();

  pid_t tid() const { return tid_.load(std::memory_order_acquire); }

  // Makes the vCPU leave KVM_RUN now (and return at once from the next one).
  void Kick();

  // What this vCPU did, for a run that stopped making progress: its exits,
  // the EFAULTs it retried after page moves, whether the guest said it
  // exited (its exit port; not the thread leaving, which a timeout makes).
  std::string Describe() const;

 private:
  void RunLoop();
  // Port I/O and MMIO: every element of a rep instruction through
  // `devices_`, reads written back for KVM to complete the instruction.
  // False when the loop must stop.
  bool Io(const VcpuExit& exit);
  bool Mmio(const VcpuExit& exit);
  // Acts on a device's reply; false when the loop must stop.
  bool Act(const PortReply& reply);
  // Ends the whole run with a message naming this vCPU and its rip.
  // Ends the run; the message gets the vCPU's rip unless `what` has one.
  void Fault(RunEnd end, const std::string& what, bool has_rip = false);

  VcpuFd& vcpu_;
  PortDevices& devices_;
  RunControl& control_;
  GuestObserver* observer_;
  std::function<void(int)> on_ring_full_;
  std::function<bool(int, std::optional<uint64_t>)> on_memory_fault_;
  MoveFence* const fence_;
  // EFAULTs retried without another exit between them: a page move's
  // windows explain a few; this many are said on stderr.
  static constexpr uint64_t kFaultsToReport = 100000;
  uint64_t faults_in_a_row_ = 0;
  std::atomic<uint64_t> exits_{0}, fault_retries_{0}, probe_faults_{0};
  std::atomic<bool> exited_{false};  // the guest said this vCPU is done (its exit port)
  std::atomic<pid_t> tid_{0};
  absl::Mutex thread_mu_;
  std::optional<pthread_t> thread_ ABSL_GUARDED_BY(thread_mu_);
};

// Installs the no-op handler for the signal that kicks vCPUs out of KVM_RUN.
void InstallKickSignalHandler();
inline constexpr int kKickSignal = SIGUSR1;

}  // namespace numavm

#endif  // NUMAVM_VMM_VCPU_RUNNER_H_
