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

// Arms until a sweep ends; the regions and probes of that sweep (and in
// `periods`, how many periods it took).
ScanPlan OneSweep(ScanControl& scan, const ScanControl::Resident& resident = nullptr,
                  int* periods = nullptr) {
  ScanPlan sweep;
  const uint64_t before = scan.sweeps();
  int period = 0;
  for (; period < 100000 && scan.sweeps() == before; ++period) {
    ScanPlan plan = scan.NextArm(resident);
    sweep.regions.insert(sweep.regions.end(), plan.regions.begin(), plan.regions.end());
    sweep.probes.insert(sweep.probes.end(), plan.probes.begin(), plan.probes.end());
    ScanFeedback feedback;
    feedback.vcpu_busy = absl::Seconds(4);
    feedback.fault_cost = absl::Microseconds(55);
    (void)scan.OnPeriod(feedback);
  }
  if (periods != nullptr) *periods = period;
  return sweep;
}

// The first sweep goes coarse to fine: its first pass visits one pair of
// regions in four - a few regions apart across the whole guest, so that a
// run of memory that must move is found within a quarter of the sweep
// (RegionBalancer's brackets move the regions between) - then the pairs
// halfway between, then the rest; every region once. A pair is the two
// regions whose probe runs meet at their boundary, armed with one call.
// Later sweeps go in address order, until half the regions of a period
// dissent from where they settled (owners changed): the sweep then starts
// again from there, coarse to fine, and ends there, every region once.
void ExpectCoarseToFine(const std::vector<GfnRange>& regions, uint64_t salt) {
  ASSERT_EQ(regions.size(), 64u);
  std::set<uint64_t> seen;
  int last_pass = 0;
  for (size_t i = 0; i < regions.size(); ++i) {
    const uint64_t index = regions[i].first / kRegionPages;
    EXPECT_TRUE(seen.insert(index).second) << "twice: " << index;
    const int pass = ScanControl::PassOf(index, salt);
    EXPECT_GE(pass, last_pass) << "region " << index << " after pass " << last_pass;
    last_pass = pass;
    EXPECT_EQ(pass == 0, i < 16) << "region " << index << " at " << i;  // 16 in the first
  }
  // Pairs of neighbours, 7 regions between a pair and the next (the pairs
  // shift by one region each sweep, as the runs' places do).
  for (size_t i = 1; i < 16; ++i) {
    const uint64_t gap =
        (regions[i].first + 64 * kRegionPages - regions[i - 1].first) / kRegionPages % 64;
    EXPECT_TRUE(gap == 1 || gap == 7) << "gap " << gap << " at " << i;
  }
}

TEST(ScanControl, TheFirstSweepAndOneWhoseOwnersChangedGoCoarseToFine) {
  ScanConfig config;
  config.rate.max_bytes_per_second = 4 * 2 * kMiB;
  config.rate.probes_per_region = 4;
  config.vcpus = 4;
  config.adaptive = true;
  ScanControl scan({{0, 64 * kRegionPages}}, 1, config);
  ExpectCoarseToFine(OneSweep(scan).regions, 0);
  // The second: address order.
  const ScanPlan second = OneSweep(scan);
  ASSERT_EQ(second.regions.size(), 64u);
  for (size_t i = 0; i < 64; ++i) EXPECT_EQ(second.regions[i].first, i * kRegionPages);
  // The third: after 8 regions, every region visited dissents.
  const uint64_t salt = scan.sweeps();
  std::vector<GfnRange> third;
  ScanFeedback feedback;
  feedback.vcpu_busy = absl::Seconds(4);
  feedback.fault_cost = absl::Microseconds(55);
  while (third.size() < 8) {
    ScanPlan plan = scan.NextArm();
    third.insert(third.end(), plan.regions.begin(), plan.regions.end());
    feedback.outcome.dissents = third.size() < 8 ? 0 : plan.regions.size();
    (void)scan.OnPeriod(feedback);
  }
  ASSERT_EQ(third.size(), 8u);
  EXPECT_EQ(third.back().first, 7 * kRegionPages);
  EXPECT_EQ(scan.coarse_restarts(), 1u);
  ASSERT_EQ(scan.sweeps(), salt);
  const ScanPlan rest = OneSweep(scan);
  // From region 8 on, coarse to fine, around to region 7.
  ExpectCoarseToFine(rest.regions, salt);
  EXPECT_EQ(scan.sweeps(), salt + 1);
  EXPECT_EQ(scan.coarse_restarts(), 1u);  // once a sweep
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

// Arms `periods` periods, each reported as costing `per_call` of host time
// per arming call and `fault` per fault; the plan that follows.
ScanPlan PlanAfter(ScanControl& scan, int periods, absl::Duration per_call, absl::Duration fault) {
  for (int i = 0; i < periods; ++i) {
    const ScanPlan plan = scan.NextArm();
    ScanFeedback feedback;
    feedback.vcpu_busy = absl::Seconds(4);
    feedback.fault_cost = fault;
    feedback.faults = 0;
    for (const GfnRange& p : plan.probes) feedback.faults += p.count;
    feedback.host_time = per_call * static_cast<double>(plan.probes.size());
    (void)scan.OnPeriod(feedback);
  }
  return scan.NextArm();
}

// Where one arming call costs the host more than the faults of its pages
// (the NUMA lab: ~5 ms a call against ~120 us a fault), a region's probes
// come as one run of neighbouring pages inside it, and neighbouring
// regions' runs meet at their boundary: one call covers two regions (a
// 4-node lab run armed 1 GiB with 800 calls, one a region, at 1% of its
// vCPUs' time - 115 s to 90% placed). Where calls are cheap, the probes
// stay four single pages spread over each region.
TEST(ScanControl, ProbesComeAsRunsOfTwoRegionsACallWhereArmingCallsAreDear) {
  ScanControl cheap = Fixed({{0, 16384}}, 4);
  const ScanPlan spread = PlanAfter(cheap, 10, absl::Microseconds(5), absl::Microseconds(55));
  ASSERT_FALSE(spread.regions.empty());
  EXPECT_EQ(spread.probes.size(), spread.regions.size() * 4);
  for (const GfnRange& p : spread.probes) EXPECT_EQ(p.count, 1u);

  ScanControl dear = Fixed({{0, 16384}}, 4);
  const ScanPlan runs = PlanAfter(dear, 10, absl::Milliseconds(3), absl::Microseconds(157));
  ASSERT_GE(runs.regions.size(), 4u);
  // Four probe pages in every region, as one run.
  for (const GfnRange& region : runs.regions) {
    uint64_t pages = 0, pieces = 0;
    for (const GfnRange& p : runs.probes) {
      const uint64_t a = std::max(p.first, region.first), b = std::min(p.end(), region.end());
      if (a < b) pages += b - a, ++pieces;
    }
    EXPECT_EQ(pages, 4u) << "region at " << region.first;
    EXPECT_EQ(pieces, 1u) << "region at " << region.first;
  }
  // Two regions a call (one more where the period's regions are odd, or
  // start with the second of a pair).
  EXPECT_LE(runs.probes.size(), runs.regions.size() / 2 + 1);
  for (const GfnRange& p : runs.probes) EXPECT_LE(p.count, 8u);
}

// Runs alternate between the two ends of each region's share from sweep to
// sweep, so that a region used by two owners at different places is not
// settled on one spot's evidence.
TEST(ScanControl, SuccessiveSweepsRunAtOtherPlacesOfARegion) {
  ScanControl scan = Fixed({{0, 8 * 512}}, 8);
  (void)PlanAfter(scan, 10, absl::Milliseconds(3), absl::Microseconds(157));
  std::vector<std::set<uint64_t>> seen(8);
  for (int period = 0; period < 4; ++period) {
    const uint64_t calls_before = scan.arm_calls();
    const ScanPlan plan = scan.NextArm();
    // Every range of the plan is one arming call, and the count says so
    // (the report's run mean per call divides by it).
    EXPECT_EQ(scan.arm_calls(), calls_before + plan.probes.size());
    for (const GfnRange& p : plan.probes)
      for (uint64_t g = p.first; g < p.end(); ++g) seen[g / kRegionPages].insert(g % kRegionPages);
    ScanFeedback feedback;
    feedback.vcpu_busy = absl::Seconds(4);
    feedback.fault_cost = absl::Microseconds(157);
    feedback.host_time = absl::Milliseconds(3) * static_cast<double>(plan.probes.size());
    (void)scan.OnPeriod(feedback);
  }
  for (size_t r = 0; r < seen.size(); ++r) EXPECT_EQ(seen[r].size(), 8u) << "region " << r;
}

// On 2 MiB backing pages (hugetlb, THP) a probe is a whole huge page: it
// costs one arming and faults once, so the host's cost per probe and the
// rate the stall budget allows are per huge page, not per 4 KiB page in it.
// (Counted per 4 KiB page, a NUMA lab THP run reported 11 us per probe
// where arming cost 2.5 ms, and scanned at 8.7% of vCPU time under a 1%
// budget.)
TEST(ScanControl, HugeProbesAreCostedPerHugePage) {
  ScanConfig config;  // the default 1% budget
  config.vcpus = 4;
  const absl::Duration per_probe = absl::Milliseconds(2), fault = absl::Microseconds(55);
  ScanControl scan({{0, 512 * 512}}, 512, config, fault);  // 1 GiB of 2 MiB pages
  for (int i = 0; i < 50; ++i) {
    const absl::Duration length = scan.period();
    const ScanPlan plan = scan.NextArm();
    uint64_t huge = 0;
    for (const GfnRange& p : plan.probes) {
      ASSERT_EQ(p.first % 512, 0u) << "whole huge pages";
      ASSERT_EQ(p.count % 512, 0u) << "whole huge pages";
      huge += p.count / 512;
    }
    ScanFeedback feedback;
    feedback.vcpu_busy = 4 * length;  // all four vCPUs busy
    feedback.fault_cost = fault;
    feedback.faults = huge;  // each written once
    feedback.host_time = per_probe * static_cast<double>(huge);
    (void)scan.OnPeriod(feedback);
  }
  EXPECT_NEAR(absl::ToDoubleMicroseconds(scan.host_cost_per_probe()), 2000, 20);
  // 1% of four vCPUs' time over (2 ms + 55 us) a huge page: 19.5 of them a
  // second, 40.8 MB/s.
  const double allowed = 0.01 * 4 / absl::ToDoubleSeconds(per_probe + fault) * 2 * kMiB;
  EXPECT_LE(scan.rate_bytes_per_second(), allowed * 1.001);
  EXPECT_GE(scan.rate_bytes_per_second(), allowed / 16);  // not below the floor
}

// Neighbouring huge pages are armed as one range (one call, one TLB
// shootdown, up to 64 of them) - where a call costs the host milliseconds
// (a NUMA lab THP run: 9.3 ms), the budget then covers the guest many
// times faster than at one call a huge page.
TEST(ScanControl, NeighbouringHugePagesAreArmedWithOneCall) {
  ScanConfig config;
  config.vcpus = 4;
  const absl::Duration per_call = absl::Milliseconds(9), fault = absl::Microseconds(600);
  auto run = [&](bool one_call_a_range) {
    ScanControl scan({{0, 512 * 512}}, 512, config, fault);  // 1 GiB of 2 MiB pages
    ScanPlan plan;
    for (int i = 0; i < 30; ++i) {
      const absl::Duration length = scan.period();
      plan = scan.NextArm();
      uint64_t huge = 0;
      for (const GfnRange& p : plan.probes) huge += p.count / 512;
      ScanFeedback feedback;
      feedback.vcpu_busy = 4 * length;
      feedback.fault_cost = fault;
      feedback.faults = huge;
      feedback.host_time =
          per_call * static_cast<double>(one_call_a_range ? plan.probes.size() : huge);
      (void)scan.OnPeriod(feedback);
    }
    return std::make_pair(plan, scan.rate_bytes_per_second());
  };
  const auto [plan, rate] = run(true);
  ASSERT_GE(plan.regions.size(), 2u);
  // The regions a period arms follow each other: one range per 64 of them.
  EXPECT_EQ(plan.probes.size(), (plan.regions.size() + 63) / 64);
  // Charged per call as the host pays, the scan is several times faster
  // than at one call a huge page (2.1 MiB/s: 1% of four vCPUs over 9.6 ms).
  const double one_call_each = run(false).second;
  EXPECT_NEAR(one_call_each, 0.04 / 9.6e-3 * 2 * kMiB, 0.1 * kMiB);
  EXPECT_GT(rate, 4 * one_call_each);
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

// 64 regions at 16 MiB/s (four regions a period once the rate is up).
ScanControl FourRegionsAPeriod(bool adaptive) {
  ScanConfig config;
  config.rate.max_bytes_per_second = 8 * 2 * kMiB;
  config.vcpus = 4;
  config.adaptive = adaptive;
  return ScanControl({{0, 64 * kRegionPages}}, 1, config);
}

// Busy vCPUs and work to do: the rate stays up.
ScanFeedback Busy() {
  ScanFeedback feedback;
  feedback.vcpu_busy = absl::Seconds(4);
  feedback.fault_cost = absl::Microseconds(55);
  feedback.outcome.wanted_moves = 1;
  return feedback;
}

// Periods until one arms four regions; returns that plan.
ScanPlan UpToSpeed(ScanControl& scan, ScanFeedback& feedback) {
  ScanPlan plan;
  for (int period = 0; period < 100 && plan.regions.size() < 4; ++period) {
    plan = scan.NextArm();
    feedback.faults = plan.probes.size();
    (void)scan.OnPeriod(feedback);
  }
  return plan;
}

// A region whose first visit asked to move (PeriodOutcome::revisit) is
// visited again in the next period, before the sweep goes on - while
// balancing; a scan that only measures takes no such requests.
TEST(ScanControl, ARegionThatAskedForASecondVisitGetsItNextPeriod) {
  for (bool adaptive : {true, false}) {
    ScanControl scan = FourRegionsAPeriod(adaptive);
    ScanFeedback feedback = Busy();
    const ScanPlan plan = UpToSpeed(scan, feedback);
    ASSERT_GE(plan.regions.size(), 4u);
    const uint64_t next_sweep_region = plan.regions.back().end() / kRegionPages;
    // Regions the sweep's first pass does not visit (ScanControl::PassOf).
    feedback.outcome.revisit = {5, 43};
    ASSERT_NE(ScanControl::PassOf(5, scan.sweeps()), 0);
    ASSERT_NE(ScanControl::PassOf(43, scan.sweeps()), 0);
    (void)scan.OnPeriod(feedback);
    const ScanPlan next = scan.NextArm();
    ASSERT_GE(next.regions.size(), 4u);
    if (!adaptive) {
      EXPECT_EQ(next.regions[0].first / kRegionPages, next_sweep_region % 64);
      EXPECT_EQ(scan.revisits(), 0u);
      continue;
    }
    EXPECT_EQ(next.regions[0].first, 5 * kRegionPages);
    EXPECT_EQ(next.regions[1].first, 43 * kRegionPages);
    EXPECT_EQ(next.regions[1].count, kRegionPages);
    EXPECT_EQ(next.regions[2].first / kRegionPages, next_sweep_region % 64);
    EXPECT_EQ(scan.revisits(), 2u);
    // Their probes lie inside them.
    uint64_t in_revisits = 0;
    for (const GfnRange& p : next.probes) {
      in_revisits += p.first / kRegionPages == 5 || p.first / kRegionPages == 43;
    }
    EXPECT_EQ(in_revisits, 2u * 4);  // four probes each
  }
}

// A guest that has touched a quarter of its RAM is swept four times as
// often: the regions with no memory cost a check, not one of the
// period's visits. One that gets memory is visited on the next sweep.
TEST(ScanControl, TheSweepPassesOverRegionsWithNoMemory) {
  std::vector<bool> has_memory(64, true);
  for (int r = 8; r < 56; ++r) has_memory[r] = false;
  auto resident = [&](const GfnRange& region) { return has_memory[region.first / kRegionPages]; };
  ScanControl plain = Fixed({{0, 64 * kRegionPages}}, 4);
  int plain_periods = 0;
  EXPECT_EQ(OneSweep(plain, nullptr, &plain_periods).regions.size(), 64u);
  ScanControl scan = Fixed({{0, 64 * kRegionPages}}, 4);
  int periods = 0;
  const ScanPlan sweep = OneSweep(scan, resident, &periods);
  std::set<uint64_t> visited;
  for (const GfnRange& r : sweep.regions) {
    EXPECT_TRUE(has_memory[r.first / kRegionPages]) << "region " << r.first / kRegionPages;
    EXPECT_TRUE(visited.insert(r.first / kRegionPages).second) << "twice: " << r.first;
  }
  EXPECT_EQ(visited.size(), 16u);
  for (const GfnRange& p : sweep.probes) {
    EXPECT_TRUE(has_memory[p.first / kRegionPages]) << "a probe in an empty region";
  }
  EXPECT_EQ(scan.regions_passed(), 48u);
  EXPECT_LE(periods * 3, plain_periods) << periods << " periods against " << plain_periods;
  has_memory[30] = true;
  const ScanPlan next = OneSweep(scan, resident);
  EXPECT_EQ(next.regions.size(), 17u);
  EXPECT_TRUE(std::any_of(next.regions.begin(), next.regions.end(),
                          [](const GfnRange& r) { return r.first == 30 * kRegionPages; }));
}

// A large guest that is mostly empty: at most kMaxPassedOver regions are
// checked a period; past them the sweep visits as it would without.
TEST(ScanControl, RegionsPassedOverAPeriodAreBounded) {
  const uint64_t regions = ScanControl::kMaxPassedOver + 100;
  ScanControl scan = Fixed({{0, regions * kRegionPages}}, 1);
  uint64_t checked = 0;
  std::set<uint64_t> checked_regions;
  const ScanPlan plan = scan.NextArm([&](const GfnRange& r) {
    ++checked;
    checked_regions.insert(r.first / kRegionPages);
    return false;
  });
  EXPECT_EQ(checked, ScanControl::kMaxPassedOver);
  ASSERT_EQ(plan.regions.size(), 1u);
  // The next region of the sweep's order, not one of those checked.
  EXPECT_EQ(checked_regions.count(plan.regions[0].first / kRegionPages), 0u);
  EXPECT_EQ(scan.regions_passed(), ScanControl::kMaxPassedOver);
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
