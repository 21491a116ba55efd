// Brackets (region_balancer.h): a run of regions that must move, visited
// coarse to fine, moves on the word of two visits a few regions apart.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "balancer/region_balancer.h"
#include "balancer/replay/model_placement_view.h"

namespace numavm {
namespace {

// A run of regions that must move, visited coarse to fine (a sweep's first
// pass visits one pair of regions in four: ScanControl): two visits a few
// regions apart that move to the same node for the same owner bracket the
// regions between, which move with them on their word, one of them is
// visited at once to check it, and their own later visits verify them. A
// region a bracket misled goes back on its own visits and is not carried
// by a bracket again; brackets of two owners, or around a region that
// moved elsewhere lately, carry nothing.
class RegionBracketTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kRegions = 32;
  void SetUp() override {
    topology_.nodes = {NumaNode{0, {0}, 1 << 30, 1 << 30}, NumaNode{1, {1}, 1 << 30, 1 << 30}};
    topology_.distance = {{10, 20}, {20, 10}};
    view_ = std::make_unique<ModelPlacementView>(topology_, kRegions * kRegionPages,
                                                 std::vector<int>{0, 1, 1}, nullptr);
    view_->TouchRange({0, kRegions * kRegionPages}, 0);
  }
  // A visit of `region`: four private samples of `vcpu`, wanting `node`.
  void Wants(uint64_t region, int vcpu, int node, int salt) {
    for (int i = 0; i < 4; ++i) {
      const uint64_t g = region * kRegionPages + 100 * i + salt;
      balancer_.AddSample(g, node, 1ull << node, view_->NodeOf(g), true, vcpu);
    }
  }
  RegionBalancer::Outcome Decide() { return balancer_.Decide(true, false, decisions_, nullptr); }
  void Drain() {
    absl::StatusOr<RegionMovesOutcome> out =
        balancer_.Drain(*view_, absl::Seconds(1), [](uint64_t) {});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  bool On(uint64_t region, int node) const {
    for (uint64_t g = region * kRegionPages; g < (region + 1) * kRegionPages; ++g) {
      if (view_->NodeOf(g) != node) return false;
    }
    return true;
  }
  // Regions 0 and 1 (a pair) settle on node 1 for vCPU 1 and move.
  void FirstPair() {
    Wants(0, 1, 1, 7);
    Wants(1, 1, 1, 7);
    Decide();
    Wants(0, 1, 1, 9);
    Wants(1, 1, 1, 9);
    ASSERT_EQ(Decide().wanted, 2u);
    Drain();
  }

  Topology topology_;
  std::unique_ptr<ModelPlacementView> view_;
  RegionBalancer balancer_{kRegions * kRegionPages, 1};
  DecisionCounts decisions_;
};

TEST_F(RegionBracketTest, TwoVisitsAFewRegionsApartMoveTheRegionsBetween) {
  FirstPair();
  // Region 8's first visit, 7 regions from region 1: it takes the word of
  // the bracket, and regions 2-7 move with it.
  Wants(8, 1, 1, 7);
  const RegionBalancer::Outcome out = Decide();
  EXPECT_EQ(out.wanted, 7u);
  EXPECT_EQ(decisions_[Decision::kRegionBracket], 6u);
  ASSERT_EQ(out.revisit.size(), 1u);
  EXPECT_GT(out.revisit[0], 1u);
  EXPECT_LT(out.revisit[0], 8u);
  Drain();
  for (uint64_t r = 0; r <= 8; ++r) EXPECT_TRUE(On(r, 1)) << "region " << r;
  EXPECT_TRUE(On(9, 0));
  // Their own visits find them in place.
  for (uint64_t r = 2; r < 8; ++r) Wants(r, 1, 1, 11);
  const RegionBalancer::Outcome check = Decide();
  EXPECT_EQ(check.wanted, 0u);
  EXPECT_EQ(decisions_[Decision::kRegionInPlace], 6u);
  // What the report says of them (balance.brackets).
  EXPECT_EQ(balancer_.brackets_borne_out(), 6u);
  EXPECT_EQ(balancer_.brackets_contradicted(), 0u);
  EXPECT_TRUE(balancer_.brackets_trusted());
}

TEST_F(RegionBracketTest, WordsThatMisleadAreUndoneAndThenNoBracketCarries) {
  FirstPair();
  Wants(8, 1, 1, 7);
  Decide();
  Drain();
  ASSERT_TRUE(On(3, 1));
  ASSERT_TRUE(On(5, 1));
  // Regions 3 and 5 were vCPU 0's (node 0): their visits contradict the
  // word, and two visits of their own take them back.
  Wants(3, 0, 0, 11);
  Wants(5, 0, 0, 11);
  EXPECT_EQ(Decide().wanted, 0u);
  Wants(3, 0, 0, 13);
  Wants(5, 0, 0, 13);
  EXPECT_EQ(Decide().wanted, 2u);
  Drain();
  EXPECT_TRUE(On(3, 0));
  EXPECT_TRUE(On(5, 0));
  EXPECT_EQ(balancer_.brackets_contradicted(), 2u);
  EXPECT_FALSE(balancer_.brackets_trusted());
  // Two of six words were wrong: this VM's memory is not in runs a
  // bracket can speak for. Region 9 moves on its neighbour's word; region
  // 16's first visit, 7 regions on, waits for its own second visit.
  Wants(9, 1, 1, 7);
  EXPECT_EQ(Decide().wanted, 1u);
  Wants(16, 1, 1, 7);
  const RegionBalancer::Outcome out = Decide();
  EXPECT_EQ(out.wanted, 0u);
  EXPECT_EQ(out.revisit, std::vector<uint64_t>{16});
  EXPECT_EQ(decisions_[Decision::kRegionBracket], 6u);
  Drain();
  for (uint64_t r = 10; r <= 16; ++r) EXPECT_TRUE(On(r, 0)) << "region " << r;
}

TEST_F(RegionBracketTest, BracketsOfTwoOwnersOrAroundAnotherOwnersMoveCarryNothing) {
  FirstPair();
  // Region 8 is vCPU 2's (its home is node 1 too), not region 1's owner's.
  Wants(8, 2, 1, 7);
  RegionBalancer::Outcome out = Decide();
  EXPECT_EQ(out.wanted, 0u);
  EXPECT_EQ(out.revisit, std::vector<uint64_t>{8});
  // Region 14 moves for vCPU 2 on its own visits; region 16's first visit
  // for vCPU 1 finds it the nearest region that moved lately: no bracket.
  Wants(14, 2, 1, 7);
  Decide();
  Wants(14, 2, 1, 9);
  EXPECT_EQ(Decide().wanted, 1u);
  Wants(16, 1, 1, 7);
  out = Decide();
  EXPECT_EQ(out.wanted, 0u);
  EXPECT_EQ(out.revisit, std::vector<uint64_t>{16});
  Drain();
  EXPECT_EQ(decisions_[Decision::kRegionBracket], 0u);
  for (uint64_t r = 2; r <= 13; ++r) EXPECT_TRUE(On(r, 0)) << "region " << r;
  EXPECT_TRUE(On(14, 1));
  EXPECT_TRUE(On(15, 0));
}

}  // namespace
}  // namespace numavm
