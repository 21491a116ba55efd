// What the scanner arms and when: the one scan control behind every face
// (`numavm run`'s sampling thread, `numavm simulate`'s sampler model). Each
// period it hands out the next window of guest memory to arm - walking the
// sampler's coverage and wrapping, like the kernel's NUMA scanner - and,
// from the period's outcome, the length of the next period
// (policy/scan_period.h). Pure: no clock, no syscalls.
#ifndef NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_
#define NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "balancer/policy/scan_period.h"
#include "balancer/sampling/scan_window.h"

namespace numavm {

struct ScanConfig {
  uint64_t window_bytes = 4ull << 20;        // armed per period
  absl::Duration period = absl::Seconds(1);  // the first, and the shortest adaptive one
  absl::Duration period_max = absl::Seconds(16);
  bool adaptive = false;  // while balancing: the period follows the outcome
};

class ScanControl {
 public:
  // `coverage`: what the sampler can watch; `align_pages`: the backing's
  // page size in 4 KiB pages (window edges are rounded to it).
  ScanControl(std::vector<GfnRange> coverage, uint64_t align_pages, const ScanConfig& config);

  // The ranges to arm for the coming period.
  std::vector<GfnRange> NextArm();
  // The period that follows `outcome` (a fixed period unless adaptive).
  absl::Duration OnPeriod(const PeriodOutcome& outcome);

  absl::Duration period() const { return periods_.period(); }
  absl::Duration period_max() const { return periods_.config().max; }
  uint64_t period_changes() const { return periods_.changes(); }
  uint64_t window_pages() const { return window_.window_pages(); }
  uint64_t sweeps() const { return window_.wraps(); }

 private:
  ScanWindow window_;
  ScanPeriodController periods_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_
