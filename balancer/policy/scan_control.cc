#include "balancer/policy/scan_control.h"

#include <utility>

namespace numavm {

ScanControl::ScanControl(std::vector<GfnRange> coverage, uint64_t align_pages,
                         const ScanConfig& config)
    : window_(std::move(coverage), config.window_bytes / 4096, align_pages),
      periods_({config.period, config.adaptive ? config.period_max : config.period}) {}

std::vector<GfnRange> ScanControl::NextArm() { return window_.Next(); }

absl::Duration ScanControl::OnPeriod(const PeriodOutcome& outcome) {
  return periods_.Next(outcome);
}

}  // namespace numavm
