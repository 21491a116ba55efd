#include "balancer/policy/scan_rate.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

constexpr double kRegionBytes = 2 << 20;
constexpr double kMiB = 1 << 20;

// A period of 4 busy vCPUs whose every probe faulted, costing `host` each.
ScanPeriodFigures Period(absl::Duration host_per_probe, uint64_t work, bool sweep_done) {
  ScanPeriodFigures f;
  f.length = absl::Seconds(1);
  f.vcpu_busy = absl::Seconds(4);
  f.regions_armed = 100;
  f.probes_armed = 400;
  f.faults = 400;
  f.fault_cost = absl::Microseconds(55);
  f.host_time = host_per_probe * 400;
  f.work = work;
  f.sweep_done = sweep_done;
  return f;
}

// 1% of 4 busy vCPUs is 40 ms a second: 727 faults of 55 us, 182 regions
// of 4 probes (364 MiB/s). At the lab's measured 5 ms of host time per
// probe the same budget buys 8 probes: 2 regions, 4 MiB a second - the
// figure the lab's NUMAVM rows show (docs/numa-lab.md).
TEST(ScanRate, TheBudgetBuysProbesAtTheirMeasuredCost) {
  ScanRate rate(ScanRateConfig{}, kRegionBytes, 4, absl::Microseconds(55));
  EXPECT_NEAR(rate.regions_per_second(), 0.04 / 55e-6 / 4, 0.5);
  for (int i = 0; i < 40; ++i) rate.OnPeriod(Period(absl::Milliseconds(5), 1, false));
  EXPECT_NEAR(rate.host_seconds_per_probe(), 0.005, 1e-5);
  EXPECT_NEAR(rate.bytes_per_second() / kMiB, 0.04 / (55e-6 + 0.005) / 4 * 2, 0.05);
}

// The kernel's scan-period back-off, per sweep: a sweep that found no work
// halves the rate, down to a sixteenth of the ceiling; moved vCPUs bring it
// back to the ceiling at once.
TEST(ScanRate, SettledSweepsHalveTheRateDownToASixteenth) {
  ScanRate rate(ScanRateConfig{}, kRegionBytes, 4, absl::Microseconds(55));
  rate.OnPeriod(Period(absl::ZeroDuration(), 0, true));
  const double ceiling = rate.ceiling_bytes_per_second();
  EXPECT_DOUBLE_EQ(rate.bytes_per_second(), ceiling) << "one sweep: not settled yet";
  for (double share : {0.5, 0.25, 0.125, 0.0625, 0.0625}) {
    rate.OnPeriod(Period(absl::ZeroDuration(), 0, true));
    EXPECT_DOUBLE_EQ(rate.bytes_per_second(), ceiling * share);
  }
  ScanPeriodFigures moved = Period(absl::ZeroDuration(), 0, false);
  moved.vcpus_moved = true;
  rate.OnPeriod(moved);
  EXPECT_DOUBLE_EQ(rate.bytes_per_second(), ceiling);
}

TEST(ScanRate, AFloorAndACeilingBoundIt) {
  ScanRateConfig config;
  config.min_bytes_per_second = 64 << 20;
  config.max_bytes_per_second = 100 << 20;
  ScanRate rate(config, kRegionBytes, 4, absl::Microseconds(55));
  EXPECT_DOUBLE_EQ(rate.bytes_per_second(), 100 * kMiB) << "the budget allows 364 MiB/s";
  for (int i = 0; i < 8; ++i) rate.OnPeriod(Period(absl::ZeroDuration(), 0, true));
  EXPECT_DOUBLE_EQ(rate.bytes_per_second(), 64 * kMiB) << "settled: at the floor, not 100/16";
}

}  // namespace
}  // namespace numavm
