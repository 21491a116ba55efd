// The queue of regions waiting to move (region_moves.h) on a placement
// model: units go to the view several at a time, and what the migration
// limit defers - the tail of a call - waits in order for the next period,
// so that every misplaced page moves exactly once and no unit is lost.
#include "balancer/region_moves.h"

#include <gtest/gtest.h>

#include "balancer/actuation/rate_limiter.h"
#include "balancer/replay/model_placement_view.h"

namespace numavm {
namespace {

constexpr uint64_t kRegions = 40;  // 80 MiB: more than one call's units
constexpr uint64_t kPages = kRegions * kRegionPages;

class RegionMovesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    topology_.nodes = {NumaNode{0, {0}, 1 << 30, 1 << 30}, NumaNode{1, {1}, 1 << 30, 1 << 30}};
    topology_.distance = {{10, 20}, {20, 10}};
    for (RegionState& r : states_) {
      r.node = 1;
      r.votes = 2;  // settled on node 1
    }
  }
  RegionMoves::StateOf StateOf() {
    return [this](const RegionMoves::Unit& u) -> RegionState* { return &states_[u.region]; };
  }
  Topology topology_;
  std::vector<RegionState> states_ = std::vector<RegionState>(kRegions);
};

TEST_F(RegionMovesTest, WhatTheLimitDefersWaitsInOrderAndEveryPageMovesOnce) {
  // 2.5 regions of budget now, and as much a second later.
  const uint64_t budget = kRegionPages * 5 / 2 * ModelPlacementView::kPageBytes;
  RateLimiter limiter(budget, budget, absl::ZeroDuration());
  ModelPlacementView view(topology_, kPages, {0, 1}, &limiter);
  view.TouchRange({0, kPages}, 0);
  RegionMoves moves(kPages, 1);
  for (uint64_t r = 0; r < kRegions; ++r) moves.Push(states_[r], {r}, 0);
  uint64_t moved = 0;
  std::vector<uint64_t> times_moved(kPages, 0);
  auto count = [&](uint64_t gfn) { ++times_moved[gfn]; };
  absl::StatusOr<RegionMovesOutcome> out = moves.Drain(StateOf(), view, absl::Seconds(0), count);
  ASSERT_TRUE(out.ok()) << out.status();
  // Two whole regions done; the third half moved waits at the front with
  // the other 37.
  EXPECT_EQ(out->pages.moved, kRegionPages * 5 / 2);
  EXPECT_EQ(out->regions_done, 2u);
  EXPECT_EQ(moves.queued(), kRegions - 2);
  EXPECT_TRUE(states_[1].flags & RegionState::kPlaced);
  EXPECT_FALSE(states_[2].flags & RegionState::kPlaced);
  EXPECT_TRUE(states_[2].flags & RegionState::kQueued);
  moved += out->pages.moved;
  for (int s = 1; moves.queued() > 0 && s < 100; ++s) {
    out = moves.Drain(StateOf(), view, absl::Seconds(s), count);
    ASSERT_TRUE(out.ok()) << out.status();
    moved += out->pages.moved;
  }
  EXPECT_EQ(moves.queued(), 0u);
  EXPECT_EQ(moved, kPages);  // every page, once
  for (uint64_t g = 0; g < kPages; ++g) {
    ASSERT_EQ(view.NodeOf(g), 1) << "page " << g;
  }
  // Each page that moved is reported once (re-migration marks), the split
  // region's first half in the period it moved.
  for (uint64_t g = 0; g < kPages; ++g) ASSERT_EQ(times_moved[g], 1u) << "page " << g;
  EXPECT_EQ(view.remigrations(), 0u);
  for (const RegionState& r : states_) {
    EXPECT_TRUE(r.flags & RegionState::kPlaced);
    EXPECT_FALSE(r.flags & RegionState::kQueued);
  }
}

// A unit that changed its mind while it waited is dropped from the queue
// wherever it is, and the units behind it still move.
TEST_F(RegionMovesTest, AUnitThatChangedItsMindIsDroppedAndTheRestMove) {
  ModelPlacementView view(topology_, kPages, {0, 1}, nullptr);
  view.TouchRange({0, kPages}, 0);
  RegionMoves moves(kPages, 1);
  for (uint64_t r = 0; r < kRegions; ++r) moves.Push(states_[r], {r}, 0);
  states_[5].votes = 1;  // not settled any more
  absl::StatusOr<RegionMovesOutcome> out =
      moves.Drain(StateOf(), view, absl::ZeroDuration(), [](uint64_t) {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->regions_done, kRegions - 1);
  EXPECT_EQ(out->pages.moved, (kRegions - 1) * kRegionPages);
  EXPECT_EQ(moves.queued(), 0u);
  EXPECT_EQ(view.NodeOf(5 * kRegionPages), 0);
  EXPECT_FALSE(states_[5].flags & RegionState::kQueued);
}

}  // namespace
}  // namespace numavm
