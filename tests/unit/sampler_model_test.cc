// The simulator's model of the hint sampler (balancer/simulate/
// sampler_model.h): who is reported touching a run of neighbouring probe
// pages that two vCPUs both go through.
#include "balancer/simulate/sampler_model.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace numavm {
namespace {

constexpr uint64_t kPages = 4096;

// Two vCPUs that both use all of the memory, as a numa01 pair does.
WorkloadPhase Pair() {
  WorkloadPhase phase;
  for (int v = 0; v < 2; ++v) {
    phase.streams.push_back(AccessStream{v, {0, kPages}, 100.0 * kPages, 1.0});
  }
  phase.segments.push_back(Segment{{0, kPages}, {0, 1}, 200.0});
  return phase;
}

// Runs of four neighbouring probes, 64 pages apart; one period in which
// every armed page is touched. Returns the vCPUs reported per run.
std::map<uint64_t, std::set<int>> TouchersPerRun(bool touch_runs) {
  SamplerModel model(SamplerKind::kHint, 2, kPages, 1, SamplerCosts{});
  model.set_touch_runs(touch_runs);
  ScanPlan plan;
  for (uint64_t g = 0; g < kPages; g += 64) plan.probes.push_back({g, 4});
  model.Arm(plan);
  AccessBatch batch;
  model.Run(Pair(), absl::ZeroDuration(), absl::Seconds(1), batch);
  std::map<uint64_t, std::set<int>> runs;
  for (const AccessSample& s : batch) runs[s.gfn / 64].insert(s.vcpu);
  return runs;
}

TEST(SamplerModel, WithTouchRunsARunOfNeighbouringProbesIsOneVcpus) {
  const std::map<uint64_t, std::set<int>> runs = TouchersPerRun(true);
  ASSERT_EQ(runs.size(), kPages / 64) << "every run touched";
  std::set<int> seen;
  for (const auto& [run, vcpus] : runs) {
    EXPECT_EQ(vcpus.size(), 1u) << "run " << run;
    seen.insert(vcpus.begin(), vcpus.end());
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1})) << "both vCPUs touch some runs";
}

TEST(SamplerModel, ByDefaultEachPageOfARunHasItsOwnToucher) {
  const std::map<uint64_t, std::set<int>> runs = TouchersPerRun(false);
  ASSERT_EQ(runs.size(), kPages / 64);
  int mixed = 0;
  for (const auto& [run, vcpus] : runs) mixed += vcpus.size() > 1;
  // Four pages drawn from two equal vCPUs: 7 runs in 8 are mixed.
  EXPECT_GT(mixed, static_cast<int>(runs.size()) / 2);
}

}  // namespace
}  // namespace numavm
