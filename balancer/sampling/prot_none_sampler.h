// PROT_NONE hinting faults (`prot`), as the kernel's NUMA balancing takes
// them, for any backing - the one sampler that sees reads of anonymous
// memory. Each period the probes are made inaccessible (mprotect
// PROT_NONE: one call per run of neighbouring probe pages). KVM reaches
// guest memory through the VMM's page tables, so a vCPU's next access to
// a probe, read or write, leaves KVM_RUN with EFAULT on the vCPU's own
// thread, and newer kernels than 6.12 say which guest-physical page
// (KVM_EXIT_MEMORY_FAULT; vmm/fault_probe.h asks). The vCPU thread hands it to OnFault: a sample
// with the vCPU that made it, the probe given its protection back, and the
// vCPU enters again - no handler thread, no wake-up. Reads and writes are
// not told apart (the exit does not say).
//
// Around it:
//  - a probe given back bumps the move fence's sequence (base/move_fence.h)
//    so that a second vCPU that faulted on the same probe meanwhile is let
//    back in, as after a page move's window;
//  - an access that KVM's instruction emulator could not make (an
//    emulation failure, which names no page) gives every probe back
//    (OnFault with no page), and the vCPU enters again;
//  - only the guest's heap is covered (as for `hint` and `wp`): the
//    payload's runtime below it is what KVM's emulator and the VMM's own
//    code read;
//  - probes left untouched stay armed for a later access, up to
//    kMaxArmedRuns runs (each splits the VMA, and a process has at most
//    vm.max_map_count mappings); past it the oldest are given back.
// Not for Linux guests (any page may be one KVM's emulator reads).
#ifndef NUMAVM_BALANCER_SAMPLING_PROT_NONE_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_PROT_NONE_SAMPLER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

class MoveFence;

class ProtNoneSampler final : public AccessSampler {
 public:
  using Clock = std::function<absl::Duration()>;

  // `fence`: the VM's move fence (not owned; outlives the sampler).
  // `exit_round_trip`: a vCPU's side of a fault as measured (a KVM_RUN
  // that ended in one: vmm/fault_probe.h); zero: kExitRoundTrip.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ProtNoneSampler>> Create(
      std::vector<GuestRamRegion> ram, int vcpus, Clock clock, MoveFence* fence,
      absl::Duration exit_round_trip = absl::ZeroDuration());
  ~ProtNoneSampler() override;

  absl::string_view name() const override { return "prot"; }
  std::vector<GfnRange> Coverage() const override { return GfnRanges(ram_); }
  uint64_t ArmAlignment() const override;
  absl::Status Start() override;
  absl::Status Collect(AccessBatch& out) override;
  absl::Status Arm(const ScanPlan& plan) override;
  bool Resident(const GfnRange& region) const override { return AnyResident(ram_, region); }
  // The host's side of a fault as measured (OnFault's time, smoothed),
  // plus the vCPU's exit and entry (measured at creation, else
  // kExitRoundTrip).
  absl::Duration FaultCost() const override;
  void Stop() override;
  SamplerStats stats() const override;

  // From vCPU `vcpu`'s thread after KVM_RUN failed with EFAULT at guest-
  // physical `gpa` (empty: an emulation failure, no page named). True when
  // it was a probe (or, with no page, when probes were armed): the vCPU
  // should enter again. False: not the sampler's; the move fence decides.
  bool OnFault(int vcpu, std::optional<uint64_t> gpa);
  // Run by the destructor once every probe is given back: whoever calls
  // OnFault stops calling it (and waits for calls in progress).
  void set_detach(std::function<void()> detach) { detach_ = std::move(detach); }

  // Runs armed and not yet faulted at once, at most.
  static constexpr size_t kMaxArmedRuns = 8192;
  // A vCPU's exit to the VMM and its entry again, which OnFault's time
  // does not include, where it was not measured.
  static constexpr absl::Duration kExitRoundTrip = absl::Microseconds(5);

 private:
  ProtNoneSampler(std::vector<GuestRamRegion> ram, int vcpus, Clock clock, MoveFence* fence,
                  absl::Duration exit_round_trip);
  struct Run {
    uint64_t pages = 0;
    uint8_t* host = nullptr;
    uint64_t period = 0;  // the Arm call that armed it
  };
  // Gives one armed run its protection back (mu_ held).
  void GiveBack(uint64_t first, const Run& run) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GiveBackAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::vector<GuestRamRegion> ram_;
  const Clock clock_;
  MoveFence* const fence_;
  const absl::Duration exit_round_trip_;
  std::function<void()> detach_;

  mutable absl::Mutex mu_;
  std::map<uint64_t, Run> armed_ ABSL_GUARDED_BY(mu_);  // by first gfn
  uint64_t period_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  double handler_seconds_ ABSL_GUARDED_BY(mu_) = 0;  // smoothed OnFault time
  AccessBatch pending_ ABSL_GUARDED_BY(mu_);
  SamplerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_PROT_NONE_SAMPLER_H_
