// The balancer of one VM: sample -> stats -> policy -> act. Fed a batch of
// samples per scan period (on the sampling thread); asks a PlacementView
// where pages and vCPUs are and to move pages. The same class runs in
// `numavm run`, `replay` and `simulate`. Counters feed the reports.
//
// Each period: where each sampled page and vCPU is; vCPU placement and
// groups (VcpuPlacer); then every sample goes through the per-page policy
// (policy/page_policy.h), and the samples of each 2 MiB region together
// through the region side (RegionBalancer: regions whose visits agree move
// as one batch, regions that keep disagreeing are split in quarters);
// samples no region decided are decided page by page.
#ifndef NUMAVM_BALANCER_VM_BALANCER_H_
#define NUMAVM_BALANCER_VM_BALANCER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/balancer_counters.h"
#include "balancer/placement_view.h"
#include "balancer/policy/page_policy.h"
#include "balancer/policy/scan_control.h"
#include "balancer/policy/scan_period.h"
#include "balancer/policy/vcpu_groups.h"
#include "balancer/region_balancer.h"
#include "balancer/sampling/access_sample.h"
#include "balancer/stats/neighbour_runs.h"
#include "balancer/stats/page_state.h"
#include "balancer/stats/region_state.h"
#include "balancer/topology/topology.h"
#include "balancer/vcpu_placer.h"

namespace numavm {

struct BalancerConfig {
  PagePolicyConfig page;
  // vCPU lists that belong together from the start (guest cells).
  std::vector<std::vector<int>> cells;
  GroupingConfig grouping;
  // How fast where-the-memory-is forgets, for vCPU placement and grouping:
  // in time, not periods, so that a short scan period does not make vCPUs
  // chase the part of their memory the guest touched last.
  absl::Duration fault_half_life = absl::Seconds(2);
  // No page moves for this long after the first batch: vCPU groups need a
  // few periods of evidence, and pages moved before them would move again.
  absl::Duration warmup = absl::Seconds(4);
  // Regions whose samples agree move as a whole (off: page by page only).
  bool regions = true;
  // 4 KiB pages per backing page (512 for hugetlb: a region is one page).
  uint64_t backing_pages = 1;
  // Off: the vCPUs' homes are the caller's (VcpuPlacerConfig::place_vcpus);
  // pages follow the vCPUs to wherever they run.
  bool place_vcpus = true;
};

class VmBalancer final {
 public:
  // A decision that moves memory: a page (`pages` 1) or a region.
  using Advice =
      std::function<void(uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason)>;

  VmBalancer(BalanceMode mode, const Topology& topology, int vcpus, uint64_t guest_pages,
             PlacementView& view, BalancerConfig config = {}, Advice advice = nullptr)
      : mode_(mode),
        view_(view),
        config_(std::move(config)),
        advice_(std::move(advice)),
        pages_(guest_pages),
        regions_(guest_pages, std::max<uint64_t>(1, config_.backing_pages)),
        placer_(mode, topology, vcpus, view,
                VcpuPlacerConfig{config_.cells, config_.grouping, config_.fault_half_life,
                                 config_.place_vcpus, guest_pages * 4096 /* bytes a page */}) {}

  // One period's samples; returns what the period did (for the scan
  // control). An error disables balancing for this VM (the caller reports
  // it); the VM runs on.
  absl::StatusOr<PeriodOutcome> OnBatch(const AccessBatch& batch, absl::Duration now);

  BalancerCounters counters() const;
  uint64_t pages_migrated() const;  // so far (counters().pages_migrated, cheaper)

 private:
  // `wanted`: moves the policy asked for; `changing`: regions whose
  // samples agree but which have not settled yet, and settled ones whose
  // samples now disagree (for the scan control).
  absl::Status Balance(const AccessBatch& batch, absl::Duration now, BalancerCounters& delta,
                       uint64_t& wanted, uint64_t& changing);
  // Fault counts and who-followed-whom on pages; returns each sample's
  // previous vCPU on its page (-1: none).
  std::vector<int> RecordSharing(const AccessBatch& batch, const std::vector<int>& page_nodes);
  // Starts a new re-migration epoch every 10 s: this epoch's marks become
  // the previous one's (and after a gap of 20 s or more, none are kept).
  void RollRemigrationEpoch(absl::Duration now);
  // Marks `gfn` as asked to move in this epoch; true if it was asked before
  // (a re-migration).
  bool MarkMoved(uint64_t gfn);

  const BalanceMode mode_;
  PlacementView& view_;
  const BalancerConfig config_;
  const Advice advice_;
  // Only the sampling thread touches these.
  PageStateTable pages_;
  RegionBalancer regions_;
  VcpuPlacer placer_;
  std::optional<absl::Duration> first_batch_;
  std::vector<int> followed_home_;  // per vCPU: the home its regions last followed
  // Per group id: the nodes its regions last followed to (a bit a node; 0:
  // none yet).
  std::vector<uint64_t> followed_group_nodes_;
  std::vector<uint64_t> revisit_;  // this period's, for PeriodOutcome::revisit
  uint64_t dissents_ = 0;          // this period's, for PeriodOutcome::dissents
  uint64_t followed_ = 0;          // this period's, for PeriodOutcome::followed
  // How long the scan takes to visit every region, from the regions
  // visited per second lately (smoothed).
  absl::Duration SweepEstimate() const;
  double visits_per_second_ = 0;
  absl::Duration last_batch_;
  absl::Duration epoch_start_;                      // of the re-migration epochs
  std::vector<uint64_t> moved_now_, moved_before_;  // pages marked in this / the last epoch
  // Co-access in address order (its counts reach counters_ under mu_).
  NeighbourRuns neighbours_{RegionBalancer::kBracketSpan, ScanControl::kMaxRunPages};
  struct PeriodLocality {
    absl::Duration at;
    uint64_t attributed = 0, local = 0;
  };
  std::deque<PeriodLocality> window_;

  mutable absl::Mutex mu_;
  BalancerCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_VM_BALANCER_H_
