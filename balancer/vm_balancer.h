// The balancer of one VM: sample -> stats -> policy -> act. Fed a batch of
// samples per scan period (on the sampling thread); asks a PlacementView
// where pages and vCPUs are and to move pages. Counters feed the reports.
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
#include "balancer/policy/scan_period.h"
#include "balancer/policy/vcpu_groups.h"
#include "balancer/sampling/access_sample.h"
#include "balancer/stats/page_state.h"
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
};

class VmBalancer final {
 public:
  using Advice = std::function<void(uint64_t gfn, int from, int to, PageReason reason)>;

  VmBalancer(BalanceMode mode, const Topology& topology, int vcpus, uint64_t guest_pages,
             PlacementView& view, BalancerConfig config = {}, Advice advice = nullptr)
      : mode_(mode), topology_(topology), view_(view), config_(std::move(config)),
        advice_(std::move(advice)), pages_(guest_pages),
        placer_(mode, topology, vcpus, view,
                VcpuPlacerConfig{config_.cells, config_.grouping, config_.fault_half_life}) {}

  // One period's samples; returns what the period did (for the scan
  // control). An error disables balancing for this VM (the caller reports
  // it); the VM runs on.
  absl::StatusOr<PeriodOutcome> OnBatch(const AccessBatch& batch, absl::Duration now);

  BalancerCounters counters() const;

 private:
  absl::Status Balance(const AccessBatch& batch, absl::Duration now, BalancerCounters& delta);
  // Fault counts and who-followed-whom on pages; returns each sample's
  // previous vCPU on its page (-1: none).
  std::vector<int> RecordSharing(const AccessBatch& batch, const std::vector<int>& page_nodes);
  // Starts a new re-migration epoch every 10 s: this epoch's marks become
  // the previous one's (and after a gap of 20 s or more, none are kept).
  void RollRemigrationEpoch(absl::Duration now);

  const BalanceMode mode_;
  const Topology& topology_;
  PlacementView& view_;
  const BalancerConfig config_;
  const Advice advice_;
  // Only the sampling thread touches these.
  PageStateTable pages_;
  VcpuPlacer placer_;
  std::optional<absl::Duration> first_batch_;
  absl::Duration epoch_start_;  // of the re-migration epochs
  std::vector<uint64_t> moved_now_, moved_before_;  // pages marked in this / the last epoch
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
