// Hinting faults, the analogue of the kernel's NUMA hinting faults: each
// period the scanner zaps the page-table entries of a window of memfd (or
// hugetlbfs) guest memory with MADV_DONTNEED; the next access to each page is
// a userfaultfd minor fault that names the page, the faulting thread (hence
// the vCPU) and whether it was a write; UFFDIO_CONTINUE maps the page back.
// Guest data never changes: the page cache keeps it.
#ifndef NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

class HintFaultSampler final : public AccessSampler {
 public:
  using VcpuOfThread = std::function<int(pid_t tid)>;  // -1 if not a vCPU
  using Clock = std::function<absl::Duration()>;

  // `ram` must be shared file memory (memfd or hugetlbfs).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HintFaultSampler>> Create(
      std::vector<GuestRamRegion> ram, int vcpus, VcpuOfThread vcpu_of_thread, Clock clock);
  ~HintFaultSampler() override;

  absl::string_view name() const override { return "hint"; }
  std::vector<GfnRange> Coverage() const override { return GfnRanges(ram_); }
  uint64_t ArmAlignment() const override;
  absl::Status Start() override;
  absl::Status Collect(AccessBatch& out) override;
  absl::Status Arm(const ScanPlan& plan) override;
  // The round trip measured at Start (a few faults on a scratch page).
  absl::Duration FaultCost() const override { return fault_cost_; }
  void Stop() override;
  SamplerStats stats() const override;

  // Maps the pages of [host, host + bytes) back that are not armed probes,
  // after a move dropped their mappings (actuation/unmapped_moves.h): the
  // guest then takes no userfault for them. 2 MiB pages are left to fault
  // (one fault a huge page, and a huge probe keeps its place). Call from the
  // thread that arms.
  void Remap(uint8_t* host, uint64_t bytes) override;

  // Fault round trips measured by the handler (fault read to CONTINUE done).
  std::vector<absl::Duration> TakeServiceTimes();

 private:
  HintFaultSampler(std::vector<GuestRamRegion> ram, int vcpus, VcpuOfThread vcpu_of_thread,
                   Clock clock);
  void HandlerLoop();
  void HandleFault(uint64_t address, uint64_t flags, pid_t tid);
  // Times faults on a scratch memfd page through the same path.
  absl::Status Calibrate();
  // UFFDIO_CONTINUE of [start, start + len), past pages mapped already.
  void Continue(uint64_t start, uint64_t len);

  const std::vector<GuestRamRegion> ram_;
  const VcpuOfThread vcpu_of_thread_;
  const Clock clock_;
  int uffd_ = -1;
  int stop_fd_ = -1;
  std::thread handler_;
  bool registered_ = false;
  // Pages zapped and not faulted since (bit per guest page, by gfn): a probe
  // still armed is not zapped again - a zap costs the guest too (KVM drops
  // its mapping), and idle memory would pay it every sweep.
  bool IsArmed(uint64_t gfn) const;
  void SetArmed(uint64_t gfn);
  void ClearArmed(uint64_t gfn);
  std::vector<std::atomic<uint64_t>> armed_;
  // The calibration's scratch mapping (mapped back by the handler, never
  // reported).
  uint8_t* scratch_ = nullptr;
  absl::Duration fault_cost_ = absl::Microseconds(55);

  mutable absl::Mutex mu_;
  AccessBatch pending_ ABSL_GUARDED_BY(mu_);
  SamplerStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> service_times_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_
