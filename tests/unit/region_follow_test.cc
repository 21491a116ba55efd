// A region that one vCPU alone settled follows that vCPU to a new home at
// once, one that one vCPU group alone settled follows the group, and a
// region of several vCPUs or groups does not. A region one vCPU alone
// visited once goes along on that visit's word, and so do regions nobody
// owns between two that went (RegionBalancer::FollowRegions).
#include <gtest/gtest.h>

#include "balancer/region_balancer.h"
#include "tests/unit/region_test_helpers.h"

namespace numavm {
namespace {

using RegionFollow = FourRegionsTest;

TEST_F(RegionFollow, ARegionOfOneVcpuFollowsItToItsNewHomeAtOnce) {
  // Region 0: vCPU 0's; region 1: vCPU 1's; region 2: both vCPUs'; region 3:
  // vCPU 0's in a group (no owner given). Two visits each settle them in
  // place on node 0.
  for (int visit = 0; visit < 2; ++visit) {
    Visit(0, {0});
    Visit(1, {1});
    Visit(2, {0, 1});
    for (int i = 0; i < 4; ++i) balancer_.AddSample(3 * kRegionPages + i, 0, 1, 0, true, -1);
    Decide();
  }
  Drain();
  EXPECT_EQ(view_->page_moves(), 0u);  // all in place
  // vCPU 0 is given a home on node 1: its own region goes there, now, with
  // every one of its pages; nothing else moves.
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 1u);
  EXPECT_EQ(decisions_[Decision::kRegionFollow], 1u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 0), kRegionPages);
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
  EXPECT_EQ(PagesOn(3, 0), kRegionPages);
  EXPECT_EQ(view_->page_moves(), kRegionPages);
  // Following again to where it is: nothing.
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 0u);
  // The next visit sees vCPU 0 on node 1 wanting node 1: in place, settled.
  for (int i = 0; i < 4; ++i) balancer_.AddSample(100 * i + 7, 1, 2, 1, true, 0);
  Decide();
  Drain();
  EXPECT_EQ(decisions_[Decision::kRegionInPlace], 1u);
  EXPECT_EQ(view_->page_moves(), kRegionPages);
  // Each region settled once (a first settling is a move, even in place).
  EXPECT_EQ(decisions_[Decision::kRegionMove], 4u);
}

// A pair's memory (numa01: vCPUs 0 and 1 in group 0) has no one vCPU to
// follow; it follows its group when the group, on one node, moves. Memory
// two groups used, and memory of one vCPU alone, stays.
TEST_F(RegionFollow, ARegionOfOneGroupFollowsTheGroupToItsNewNode) {
  for (int visit = 0; visit < 2; ++visit) {
    for (int i = 0; i < 4; ++i) {
      balancer_.AddSample(0 * kRegionPages + 100 * i + 7, 0, 1, 0, false, -1, 0);
      balancer_.AddSample(1 * kRegionPages + 100 * i + 7, 0, 1, 0, false, -1, i % 2 == 0 ? 0 : 2);
      balancer_.AddSample(2 * kRegionPages + 100 * i + 7, 0, 1, 0, true, 3);
    }
    Decide();
  }
  Drain();
  EXPECT_EQ(view_->page_moves(), 0u);
  EXPECT_EQ(balancer_.FollowGroup(0, 1, 1ull << 1, true, decisions_, nullptr), 1u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 0), kRegionPages);
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
  EXPECT_EQ(view_->page_moves(), kRegionPages);
  // Group 2 moving takes nothing (region 1 was not its alone); nor does a
  // vCPU's follow take a group's region.
  EXPECT_EQ(balancer_.FollowGroup(2, 1, 1ull << 1, true, decisions_, nullptr), 0u);
  EXPECT_EQ(balancer_.Follow(0, 0, true, decisions_, nullptr), 0u);
  EXPECT_EQ(view_->page_moves(), kRegionPages);
}

TEST_F(RegionFollow, AdviseFollowsWithoutMoving) {
  for (int visit = 0; visit < 2; ++visit) {
    Visit(0, {0});
    balancer_.Decide(false, false, decisions_, nullptr);
  }
  int advised = 0;
  EXPECT_EQ(balancer_.Follow(
                0, 1, false, decisions_,
                [&](uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason) {
                  EXPECT_EQ(gfn, 0u);
                  EXPECT_EQ(pages, kRegionPages);
                  EXPECT_EQ(from, 0);
                  EXPECT_EQ(to, 1);
                  EXPECT_EQ(reason, "region-follow");
                  ++advised;
                }),
            1u);
  EXPECT_EQ(advised, 1);
  Drain();
  EXPECT_EQ(view_->page_moves(), 0u);
}

// The NUMA lab's burst of first samples: every region gets one visit while
// all vCPUs still run on node 0; a vCPU then moves. Its regions go along at
// once, on their one visit's word, and their next visit checks the word.
TEST_F(RegionFollow, AnUnsettledRegionOfOneVcpuGoesAlongAtOnceOnItsVisitsWord) {
  Visit(0, {0});  // one visit: not settled
  Visit(1, {1});  // another vCPU's
  Decide();
  Drain();
  EXPECT_EQ(view_->page_moves(), 0u);
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 1u);
  EXPECT_EQ(decisions_[Decision::kRegionFollow], 1u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 0), kRegionPages);  // vCPU 1's stays
  EXPECT_EQ(view_->page_moves(), kRegionPages);
  // Its next visit, from vCPU 0 at its new home, bears the word out: in
  // place, nothing moves again.
  for (int i = 0; i < 4; ++i) balancer_.AddSample(100 * i + 7, 1, 2, 1, true, 0);
  Decide();
  Drain();
  EXPECT_EQ(balancer_.brackets_borne_out(), 1u);
  EXPECT_EQ(balancer_.brackets_contradicted(), 0u);
  EXPECT_EQ(decisions_[Decision::kRegionInPlace], 1u);
  EXPECT_EQ(view_->page_moves(), kRegionPages);
}

// A word that does not hold (the one visit saw one vCPU of memory two use,
// by chance) is found out by the next visit, counts against this VM's
// words, and once they were contradicted twice with none borne out, the
// next vCPU's unsettled regions wait for their own second visit.
TEST_F(RegionFollow, ContradictedWordsMakeUnsettledRegionsWaitForTheirNextVisit) {
  Visit(0, {0});
  Visit(1, {0});
  Visit(2, {1});
  Decide();
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 2u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 1), kRegionPages);
  // Their next visits come from vCPU 1, still on node 0, wanting node 0.
  for (uint64_t region : {0, 1}) {
    for (int i = 0; i < 4; ++i) {
      balancer_.AddSample(region * kRegionPages + 100 * i + 7, 0, 1, 1, true, 1);
    }
  }
  Decide();
  EXPECT_EQ(balancer_.brackets_contradicted(), 2u);
  EXPECT_FALSE(balancer_.brackets_trusted());
  // vCPU 1 moves: its one-visit region is set for node 1 but stays until
  // its next visit there agrees.
  const uint64_t moves = view_->page_moves();
  EXPECT_EQ(balancer_.Follow(1, 1, true, decisions_, nullptr), 0u);
  Drain();
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
  EXPECT_EQ(view_->page_moves(), moves);
  for (int i = 0; i < 4; ++i) balancer_.AddSample(2 * kRegionPages + 100 * i + 7, 1, 2, 0, true, 1);
  Decide();
  Drain();
  EXPECT_EQ(PagesOn(2, 1), kRegionPages);
}

TEST_F(RegionFollow, AnUnsettledRegionOfSeveralVcpusDoesNotFollow) {
  // A later visit by another vCPU makes it nobody's.
  Visit(0, {0});
  Decide();
  Visit(0, {1});
  Decide();
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 0u);
}

// A vCPU's run with gaps the scan has not visited yet (regions 1 and 2):
// they go along with the two regions either side that followed, on their
// word; the next visits check it.
TEST_F(RegionFollow, RegionsNobodyOwnsBetweenTwoThatFollowGoAlong) {
  Visit(0, {0});
  Visit(3, {0});
  Decide();
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 4u);
  EXPECT_EQ(decisions_[Decision::kRegionFollow], 2u);
  EXPECT_EQ(decisions_[Decision::kRegionBracket], 2u);
  Drain();
  for (uint64_t region = 0; region < 4; ++region) EXPECT_EQ(PagesOn(region, 1), kRegionPages);
  for (int i = 0; i < 4; ++i) balancer_.AddSample(kRegionPages + 100 * i + 7, 1, 2, 1, true, 0);
  Decide();
  EXPECT_EQ(balancer_.brackets_borne_out(), 1u);
}

// ... but not across a region someone else owns: that is not one run.
TEST_F(RegionFollow, NothingGoesAlongAcrossAnotherVcpusRegion) {
  Visit(0, {0});
  Visit(2, {1});
  Visit(3, {0});
  Decide();
  EXPECT_EQ(balancer_.Follow(0, 1, true, decisions_, nullptr), 2u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 0), kRegionPages);
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
  EXPECT_EQ(PagesOn(3, 1), kRegionPages);
  EXPECT_EQ(decisions_[Decision::kRegionBracket], 0u);
}

}  // namespace
}  // namespace numavm
