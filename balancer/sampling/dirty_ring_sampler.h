// The per-vCPU dirty ring (KVM_CAP_DIRTY_LOG_RING): KVM appends (slot,
// offset) for every page a vCPU dirties; we harvest the rings from the
// balancer thread, mark entries reset and call KVM_RESET_DIRTY_RINGS, which
// write-protects those pages again. A vCPU whose ring fills exits with
// KVM_EXIT_DIRTY_RING_FULL and harvests its own ring before running on.
// Sees writes, with the vCPU; cost grows with the write rate, not with RAM.
//
// A drain thread empties the rings every `drain_interval` so that vCPUs
// rarely reach ring-full. Where KVM emulates guest instructions (no hardware
// virtualization) it pushes an entry for every emulated store rather than
// once per page and may run past the ring's end before it exits; harvesting
// scans the whole ring rather than trusting an index, and a second ring-full
// exit running with nothing to harvest lets KVM's reset index catch up over
// the entries it overwrote, never past its dirty index (OnRingFull).
#ifndef NUMAVM_BALANCER_SAMPLING_DIRTY_RING_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_DIRTY_RING_SAMPLER_H_

#include <linux/kvm.h>

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

struct DirtyRingView {
  kvm_dirty_gfn* entries = nullptr;  // the vCPU's mmap'ed ring
  uint32_t count = 0;                // entries (a power of two)
};

class DirtyRingSampler final : public AccessSampler {
 public:
  using Clock = std::function<absl::Duration()>;
  // KVM_RESET_DIRTY_RINGS: KVM walks each ring from its reset index while
  // entries read reset, and write-protects their pages again.
  using ResetRingsFn = std::function<absl::Status()>;

  // The VM must have been created with the ring enabled, `rings[i]` being
  // vCPU i's ring. `reset` replaces the ioctl on `vm_fd` (a test's model
  // of KVM's rings).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DirtyRingSampler>> Create(
      int vm_fd, std::vector<GuestRamRegion> ram, std::vector<DirtyRingView> rings, Clock clock,
      absl::Duration drain_interval = absl::Milliseconds(5), ResetRingsFn reset = nullptr);
  ~DirtyRingSampler() override;

  absl::string_view name() const override { return "ring"; }
  std::vector<GfnRange> Coverage() const override { return GfnRanges(ram_); }
  absl::Status Start() override;
  absl::Status Collect(AccessBatch& out) override;
  // The rings watch all of RAM all the time; only entries inside the
  // regions the scan control armed for the period are reported (the rest
  // are harvested and dropped), so that the balancer's work follows the
  // scan rate, not the guest's write rate.
  absl::Status Arm(const ScanPlan& plan) override;
  void Stop() override;
  SamplerStats stats() const override;

  // Called on vCPU `vcpu`'s thread after KVM_EXIT_DIRTY_RING_FULL.
  void OnRingFull(int vcpu);

  // Entries harvested so far and the time spent harvesting them.
  uint64_t entries_harvested() const;
  absl::Duration harvest_time() const;

 private:
  DirtyRingSampler(int vm_fd, std::vector<GuestRamRegion> ram, std::vector<DirtyRingView> rings,
                   Clock clock, absl::Duration drain_interval, ResetRingsFn reset);
  absl::Status SetLogging(bool on);
  // Harvests one ring into `pending_` (deduplicated per period).
  uint64_t HarvestRing(int vcpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Harvests every ring and resets them if anything was harvested.
  absl::Status Drain();
  absl::Status ResetRings();
  // After an overrun: moves KVM's reset index of `vcpu`'s ring over the
  // entries KVM overwrote (see the .cc).
  void CatchUp(int vcpu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DrainLoop();

  const int vm_fd_;
  const std::vector<GuestRamRegion> ram_;
  const std::vector<DirtyRingView> rings_;
  const Clock clock_;
  const absl::Duration drain_interval_;
  const ResetRingsFn reset_;
  bool logging_ = false;
  std::thread drainer_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  AccessBatch pending_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> seen_ ABSL_GUARDED_BY(mu_);  // (gfn, vcpu) this period
  std::vector<GfnRange> armed_ ABSL_GUARDED_BY(mu_);         // sorted
  SamplerStats stats_ ABSL_GUARDED_BY(mu_);
  uint64_t entries_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration harvest_time_ ABSL_GUARDED_BY(mu_);
  // Per vCPU: ring-full exits in a row that found nothing to harvest.
  std::vector<int> empty_full_exits_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_DIRTY_RING_SAMPLER_H_
