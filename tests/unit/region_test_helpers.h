// Helpers for tests of RegionBalancer on a placement model.
#ifndef NUMAVM_TESTS_UNIT_REGION_TEST_HELPERS_H_
#define NUMAVM_TESTS_UNIT_REGION_TEST_HELPERS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "balancer/region_balancer.h"
#include "balancer/replay/model_placement_view.h"

namespace numavm {

// How many of `region`'s pages are on `node`.
inline uint64_t PagesOnNode(const ModelPlacementView& view, uint64_t region, int node) {
  uint64_t n = 0;
  for (uint64_t g = region * kRegionPages; g < (region + 1) * kRegionPages; ++g) {
    n += view.NodeOf(g) == node;
  }
  return n;
}

// Carries out the moves `balancer` queued.
inline void DrainMoves(RegionBalancer& balancer, ModelPlacementView& view) {
  absl::StatusOr<RegionMovesOutcome> out = balancer.Drain(view, absl::Seconds(1), [](uint64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
}

// A fixture: a RegionBalancer of `kGuestPages` and a placement model the
// derived fixture sets up.
template <uint64_t kGuestPages>
class RegionModelTest : public ::testing::Test {
 protected:
  uint64_t PagesOn(uint64_t region, int node) const { return PagesOnNode(*view_, region, node); }
  void Drain() { DrainMoves(balancer_, *view_); }

  Topology topology_;
  std::unique_ptr<ModelPlacementView> view_;
  RegionBalancer balancer_{kGuestPages, 1};
  DecisionCounts decisions_;
};

inline constexpr uint64_t kFourRegionsPages = 4 * kRegionPages;

// Four regions on two nodes of one CPU, all first touched on node 0.
class FourRegionsTest : public RegionModelTest<kFourRegionsPages> {
 protected:
  void SetUp() override {
    topology_.nodes = {NumaNode{0, {0}, 1 << 30, 1 << 30}, NumaNode{1, {1}, 1 << 30, 1 << 30}};
    topology_.distance = {{10, 20}, {20, 10}};
    view_ = std::make_unique<ModelPlacementView>(topology_, kFourRegionsPages,
                                                 std::vector<int>{0, 0}, nullptr);
    view_->TouchRange({0, kFourRegionsPages}, 0);
  }
  // One visit of `region`: four private samples, from `vcpus` in turn,
  // each wanting node 0 (where everything is).
  void Visit(uint64_t region, std::vector<int> vcpus) {
    for (int i = 0; i < 4; ++i) {
      const int v = vcpus[i % vcpus.size()];
      balancer_.AddSample(region * kRegionPages + 100 * i + 7, 0, 1, 0, true, v);
    }
  }
  RegionBalancer::Outcome Decide() { return balancer_.Decide(true, false, decisions_, nullptr); }
};

}  // namespace numavm

#endif  // NUMAVM_TESTS_UNIT_REGION_TEST_HELPERS_H_
