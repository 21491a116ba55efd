#include "balancer/policy/scan_control.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "balancer/stats/region_state.h"

namespace numavm {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// A scan control that arms `regions_per_period` regions each 1 s period:
// the rate capped there, far below what the budget allows.
ScanControl Fixed(std::vector<GfnRange> coverage, uint64_t regions_per_period) {
  ScanConfig config;
  config.rate.max_bytes_per_second = regions_per_period * 2 * kMiB;
  config.vcpus = 4;
  return ScanControl(std::move(coverage), 1, config);
}

// Arms until a sweep ends; the regions and probes of that sweep.
ScanPlan OneSweep(ScanControl& scan) {
  ScanPlan sweep;
  const uint64_t before = scan.sweeps();
  for (int period = 0; period < 100000 && scan.sweeps() == before; ++period) {
    ScanPlan plan = scan.NextArm();
    sweep.regions.insert(sweep.regions.end(), plan.regions.begin(), plan.regions.end());
    sweep.probes.insert(sweep.probes.end(), plan.probes.begin(), plan.probes.end());
    ScanFeedback feedback;
    feedback.vcpu_busy = absl::Seconds(4);
    feedback.fault_cost = absl::Microseconds(55);
    (void)scan.OnPeriod(feedback);
  }
  return sweep;
}

TEST(ScanControl, ASweepArmsEveryPageOfTheCoverageOnceInRegions) {
  // Slots with holes and edges off the 2 MiB grid.
  const std::vector<GfnRange> coverage = {{0, 1000}, {2048, 512}, {5000, 3000}, {9000, 1}};
  ScanControl scan = Fixed(coverage, 3);
  std::vector<int> armed(10000, 0);
  const ScanPlan sweep = OneSweep(scan);
  for (const GfnRange& r : sweep.regions) {
    EXPECT_EQ(r.first / kRegionPages, (r.end() - 1) / kRegionPages) << "a region within 2 MiB";
    for (uint64_t g = r.first; g < r.end(); ++g) ++armed[g];
  }
  for (uint64_t g = 0; g < armed.size(); ++g) {
    const bool covered = std::any_of(coverage.begin(), coverage.end(),
                                     [g](const GfnRange& r) { return r.Contains(g); });
    ASSERT_EQ(armed[g], covered ? 1 : 0) << "gfn " << g;
  }
  // 2 + 1 + 7 (5000-7999 crosses 5120, 5632, ..., 7680) + 1 regions.
  EXPECT_EQ(sweep.regions.size(), 11u);
}

TEST(ScanControl, EverySweepProbesTheSamePages) {
  ScanControl scan = Fixed({{0, 64 * kMiB / 4096}, {100000, 700}}, 5);
  const ScanPlan a = OneSweep(scan);
  const ScanPlan b = OneSweep(scan);
  auto firsts = [](const std::vector<GfnRange>& v) {
    std::set<uint64_t> s;
    for (const GfnRange& r : v) s.insert(r.first);
    return s;
  };
  EXPECT_EQ(firsts(a.probes), firsts(b.probes));
  EXPECT_EQ(firsts(a.regions), firsts(b.regions));
  // 4 probes in each of the 32 whole regions, those of the grid that fall
  // in the two partial ones (352 and 348 pages: 2 or 3 each).
  EXPECT_EQ(a.probes.size(), b.probes.size());
  EXPECT_GE(a.probes.size(), 32u * 4u + 4u);
  EXPECT_LE(a.probes.size(), 32u * 4u + 6u);
}

TEST(ScanControl, TinyGuestsAreSweptToo) {
  for (uint64_t pages : {1ull, 511ull, 512ull, 513ull, 1024ull, 1536ull}) {
    ScanControl scan = Fixed({{0, pages}}, 1);
    const ScanPlan sweep = OneSweep(scan);
    uint64_t armed = 0;
    for (const GfnRange& r : sweep.regions) armed += r.count;
    EXPECT_EQ(armed, pages) << pages << " pages";
  }
}

}  // namespace
}  // namespace numavm
