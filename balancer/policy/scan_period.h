// The adaptive scan period, as the kernel's task_numa_work adapts
// numa_scan_period: aim for about 70% local accesses; when a period was at
// least that local and moved nothing, scan half as often (down to `max`);
// when it was less local, twice as often (up to `min`), and at `min` at once
// when it was less than half the target local (a phase change); right after
// a vCPU changed node (its memory will follow), at `min` again. Pure: the outcome
// of each period is the input.
#ifndef NUMAVM_BALANCER_POLICY_SCAN_PERIOD_H_
#define NUMAVM_BALANCER_POLICY_SCAN_PERIOD_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace numavm {

struct ScanPeriodConfig {
  absl::Duration min = absl::Seconds(1);
  absl::Duration max = absl::Seconds(16);
  double target_locality = 0.7;
};

struct PeriodOutcome {
  uint64_t attributed = 0;  // samples with a vCPU and a resident page
  uint64_t local = 0;
  uint64_t pages_migrated = 0;
  uint64_t vcpu_moves = 0;
  uint64_t wanted_moves = 0;  // pages the policy wanted moved, done or deferred
  uint64_t changing = 0;      // regions on the way to a decision, or leaving one
  // The thread's CPU in page migrations this period: bounded by the
  // migration limit (--migrate-rate), not charged to the scan's budget.
  absl::Duration move_cpu_time;
  // Regions (gfn / 512) whose first agreeing visit found their pages away
  // from where their samples want them: the scan visits them again next
  // period (ScanControl), so that a move needs one sweep, not two.
  std::vector<uint64_t> revisit;
  // The thread's CPU in the placement view's calls this period: which node
  // each sampled page is on, where the vCPUs ran, other work per node,
  // pinning (the kernel's side of deciding; the rest is the policy).
  absl::Duration view_cpu_time;
  // Settled regions whose visit agreed on another node than the one they
  // settled on: an owner that changed (ScanControl starts the sweep again
  // from there coarse to fine, once a sweep, when they are half the
  // regions visited).
  uint64_t dissents = 0;
  // Regions set for the new node of a vCPU or vCPU group that moved
  // (RegionBalancer::Follow, FollowGroup): its memory elsewhere has yet
  // to be found, so ScanControl
  // starts the sweep again coarse to fine, once a sweep, as for dissents.
  uint64_t followed = 0;
};

class ScanPeriodController {
 public:
  explicit ScanPeriodController(ScanPeriodConfig config) : config_(config), period_(config.min) {}

  absl::Duration period() const { return period_; }
  const ScanPeriodConfig& config() const { return config_; }
  uint64_t changes() const { return changes_; }

  // The period to use next.
  absl::Duration Next(const PeriodOutcome& o) {
    absl::Duration next = period_;
    if (o.vcpu_moves > 0) {
      next = config_.min;
    } else if (o.attributed == 0 ||
               (static_cast<double>(o.local) >= config_.target_locality * o.attributed &&
                o.pages_migrated == 0)) {
      // Nothing to see, or settled: back off.
      next = std::min(config_.max, period_ * 2);
    } else if (static_cast<double>(o.local) < config_.target_locality / 2 * o.attributed) {
      // Locality collapsed (a phase change after a long stable stretch):
      // halving from a long period would take many periods to notice.
      next = config_.min;
    } else if (static_cast<double>(o.local) < config_.target_locality * o.attributed) {
      next = std::max(config_.min, period_ / 2);
    }
    if (next != period_) ++changes_;
    period_ = next;
    return period_;
  }

 private:
  const ScanPeriodConfig config_;
  absl::Duration period_;
  uint64_t changes_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_SCAN_PERIOD_H_
