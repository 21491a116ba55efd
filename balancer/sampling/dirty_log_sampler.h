// Dirty-log windows: KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2 lets us arm a window
// of guest memory with KVM_CLEAR_DIRTY_LOG (clear its bits, write-protect its
// pages) and harvest it later with KVM_GET_DIRTY_LOG. Sees writes only, with
// no vCPU attribution; costs a bitmap walk per slot per period.
#ifndef NUMAVM_BALANCER_SAMPLING_DIRTY_LOG_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_DIRTY_LOG_SAMPLER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/guest_ram.h"
#include "balancer/sampling/scan_window.h"

namespace numavm {

class DirtyLogSampler final : public AccessSampler {
 public:
  using Clock = std::function<absl::Duration()>;

  // `vm_fd` is the KVM VM; `ram` its memory slots.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DirtyLogSampler>> Create(
      int vm_fd, std::vector<GuestRamRegion> ram, int vcpus, Clock clock);
  ~DirtyLogSampler() override;

  absl::string_view name() const override { return "dirtylog"; }
  std::vector<GfnRange> Coverage() const override { return GfnRanges(ram_); }
  absl::Status Start() override;
  absl::Status Collect(AccessBatch& out) override;
  absl::Status Arm(const ScanPlan& plan) override { return ArmRanges(plan.regions); }
  void Stop() override;
  SamplerStats stats() const override;

 private:
  DirtyLogSampler(int vm_fd, std::vector<GuestRamRegion> ram, int vcpus, Clock clock);
  absl::Status SetLogging(bool on);
  absl::Status ArmRanges(const std::vector<GfnRange>& ranges);
  absl::Status Harvest(const std::vector<GfnRange>& window, AccessBatch& out);

  const int vm_fd_;
  const std::vector<GuestRamRegion> ram_;
  const Clock clock_;
  std::vector<GfnRange> armed_;                 // what the next Collect harvests
  std::vector<std::vector<uint64_t>> bitmaps_;  // one per slot
  bool logging_ = false;

  mutable absl::Mutex mu_;
  SamplerStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_DIRTY_LOG_SAMPLER_H_
