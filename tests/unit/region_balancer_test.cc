// The region side of the balancer (region_balancer.h) on a placement model:
// regions settle on their second agreeing visit (or their first, beside a
// neighbour settled on the same node) and move whole. Following a vCPU or
// group that moved: region_follow_test.cc.
#include "balancer/region_balancer.h"

#include <gtest/gtest.h>

#include "balancer/replay/model_placement_view.h"
#include "tests/unit/region_test_helpers.h"

namespace numavm {
namespace {

using RegionBalancerTest = FourRegionsTest;

// A first agreeing visit that finds the region's pages away from where its
// samples want them asks for a second visit soon (the scan control arms it
// next period); one that finds them in place, one that disagrees within
// itself, and a second visit do not.
TEST_F(RegionBalancerTest, AFirstVisitThatWantsAMoveAsksForASecondOne) {
  Visit(0, {0});                 // in place: everything is on node 0
  for (int i = 0; i < 4; ++i) {  // region 1: vCPU 1 on node 1 wants it there
    balancer_.AddSample(1 * kRegionPages + 100 * i + 7, 1, 2, 0, true, 1);
  }
  for (int i = 0; i < 4; ++i) {  // region 2: two targets at once
    balancer_.AddSample(2 * kRegionPages + 100 * i + 7, i % 2, 1ull << (i % 2), 0, true, i % 2);
  }
  RegionBalancer::Outcome first = Decide();
  EXPECT_EQ(first.revisit, std::vector<uint64_t>{1});
  for (int i = 0; i < 4; ++i) {
    balancer_.AddSample(1 * kRegionPages + 100 * i + 9, 1, 2, 0, true, 1);
  }
  RegionBalancer::Outcome second = Decide();
  EXPECT_TRUE(second.revisit.empty());  // settled: it moves now
  EXPECT_EQ(second.wanted, 1u);
  Drain();
  EXPECT_EQ(PagesOn(1, 1), kRegionPages);
}

// Memory of one owner comes in runs: once a region settled on its second
// visit, a neighbour whose first visit agrees settles and moves at once (no
// second visit asked), and so does the next one, witnessed by the region
// settled a moment before in the same period. A neighbour whose first visit
// wants another node waits for its own second visit.
TEST_F(RegionBalancerTest, ANeighbourSettledOnTheSameNodeWitnessesAFirstVisit) {
  auto wants_node_1 = [&](uint64_t region, int salt) {
    for (int i = 0; i < 4; ++i) {  // vCPU 1, on node 1, wants it there
      balancer_.AddSample(region * kRegionPages + 100 * i + salt, 1, 2, 0, true, 1);
    }
  };
  wants_node_1(0, 7);
  EXPECT_EQ(Decide().revisit, std::vector<uint64_t>{0});  // a first visit alone
  wants_node_1(0, 9);
  EXPECT_EQ(Decide().wanted, 1u);
  // Regions 1 and 2 in one period, 2 before 1 in the samples' order.
  wants_node_1(2, 7);
  wants_node_1(1, 7);
  Visit(3, {0});  // vCPU 0 wants node 0, beside region 2 settled on node 1
  RegionBalancer::Outcome next = Decide();
  EXPECT_EQ(next.wanted, 2u);
  EXPECT_TRUE(next.revisit.empty());
  EXPECT_FALSE(balancer_.Decided(3 * kRegionPages + 7));
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  EXPECT_EQ(PagesOn(1, 1), kRegionPages);
  EXPECT_EQ(PagesOn(2, 1), kRegionPages);
  EXPECT_EQ(PagesOn(3, 0), kRegionPages);
  EXPECT_EQ(decisions_[Decision::kRegionMove], 3u);
}

// A run of regions whose owner changed (a phase of the workload): the
// first region's three visits - one that dissents from where it settled,
// one that changes its mind, one that confirms it - are each asked for at
// once (a sweep apart before: three sweeps to follow), and once it settled
// on the new node its neighbours follow on one visit each, on its word. A
// region whose next visit contradicts the word it took takes no word again:
// at the edge between two owners' runs it is not carried back and forth.
TEST_F(RegionBalancerTest, ARunWhoseOwnerChangedFollowsItsFirstRegionOnOneVisitEach) {
  auto wants = [&](uint64_t region, int node, int salt) {
    for (int i = 0; i < 4; ++i) {  // vCPU `node`, whose home is node `node`
      const uint64_t g = region * kRegionPages + 100 * i + salt;
      balancer_.AddSample(g, node, 1ull << node, view_->NodeOf(g), true, node);
    }
  };
  for (int visit = 0; visit < 2; ++visit) {  // all four settle on node 0, in place
    for (uint64_t r = 0; r < 4; ++r) wants(r, 0, 7 + visit);
    Decide();
  }
  Drain();
  ASSERT_EQ(view_->page_moves(), 0u);
  wants(0, 1, 11);
  RegionBalancer::Outcome dissent = Decide();
  EXPECT_EQ(dissent.revisit, std::vector<uint64_t>{0});
  EXPECT_EQ(dissent.wanted, 0u);
  wants(0, 1, 13);
  RegionBalancer::Outcome changed = Decide();
  EXPECT_EQ(changed.revisit, std::vector<uint64_t>{0});
  EXPECT_EQ(changed.wanted, 0u);
  wants(0, 1, 15);
  EXPECT_EQ(Decide().wanted, 1u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  // Its neighbours, on one visit each (the second witnessed by the first).
  wants(1, 1, 11);
  wants(2, 1, 11);
  RegionBalancer::Outcome run = Decide();
  EXPECT_EQ(run.wanted, 2u);
  EXPECT_TRUE(run.revisit.empty());
  Drain();
  EXPECT_EQ(PagesOn(1, 1), kRegionPages);
  EXPECT_EQ(PagesOn(2, 1), kRegionPages);
  EXPECT_EQ(PagesOn(3, 0), kRegionPages);
  // Region 2's next visit says node 0 after all (the edge of vCPU 0's run,
  // region 3): it was misled. It goes back on its own visits only, and a
  // later visit for node 1 beside region 1 dissents instead of taking its
  // word again.
  wants(2, 0, 13);
  EXPECT_EQ(Decide().wanted, 0u);  // a change of mind, on its own evidence
  wants(2, 0, 15);
  EXPECT_EQ(Decide().wanted, 1u);
  Drain();
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
  wants(2, 1, 17);
  RegionBalancer::Outcome again = Decide();
  EXPECT_EQ(again.wanted, 0u);
  EXPECT_EQ(again.revisit, std::vector<uint64_t>{2});  // a dissent, visited again
  EXPECT_EQ(PagesOn(2, 0), kRegionPages);
}

// The chain of regions settled on a neighbour's word is bounded: a chance
// agreement must not carry through a whole buffer. Past kMaxWitnessChain
// regions from the one that settled by its own visits, a first visit waits
// for its second, and a region that then settles by its own visits is a
// full witness again.
TEST(RegionWitnessTest, AChainOfWitnessesEndsAfterKMaxWitnessChainRegions) {
  constexpr uint64_t kRegions = kMaxWitnessChain + 5;
  RegionBalancer balancer(kRegions * kRegionPages, 1);
  DecisionCounts decisions;
  auto wants_node_1 = [&](uint64_t region, int salt) {
    for (int i = 0; i < 4; ++i) {
      balancer.AddSample(region * kRegionPages + 100 * i + salt, 1, 2, 0, true, 1);
    }
  };
  auto decide = [&] { return balancer.Decide(true, false, decisions, nullptr); };
  wants_node_1(0, 7);
  decide();
  wants_node_1(0, 9);
  EXPECT_EQ(decide().wanted, 1u);
  const uint64_t first_unwitnessed = kMaxWitnessChain + 1;
  for (uint64_t r = 1; r <= first_unwitnessed; ++r) wants_node_1(r, 7);
  RegionBalancer::Outcome once = decide();
  EXPECT_EQ(once.wanted, static_cast<uint64_t>(kMaxWitnessChain));
  EXPECT_EQ(once.revisit, std::vector<uint64_t>{first_unwitnessed});
  // Its own second visit settles it, and it witnesses its neighbour's
  // first visit as the first region did.
  wants_node_1(first_unwitnessed, 9);
  EXPECT_EQ(decide().wanted, 1u);
  wants_node_1(first_unwitnessed + 1, 7);
  RegionBalancer::Outcome next = decide();
  EXPECT_EQ(next.wanted, 1u);
  EXPECT_TRUE(next.revisit.empty());
}

// numa01 in the NUMA lab: vCPUs 2-3 ran on node 0 until they had homes on
// node 1, and their first visits of their shared memory voted for node 0.
// Once they had homes those votes are stale: the next visit, for node 1,
// starts the region afresh and asks for a second one at once, where a
// change of mind would wait two more visits (a sweep each).
TEST_F(RegionBalancerTest, VotesCastBeforeAFirstHomeAreNotAChangeOfMind) {
  Visit(0, {0, 1});  // both vCPUs, for node 0 where the memory is
  Visit(1, {0, 1});
  Decide();
  EXPECT_EQ(balancer_.AgeVotes(), 2u);
  auto for_node_1 = [&](uint64_t region, int salt) {
    for (int i = 0; i < 4; ++i) {
      balancer_.AddSample(region * kRegionPages + 100 * i + salt, 1, 2, 0, true, i % 2);
    }
  };
  for_node_1(0, 9);
  RegionBalancer::Outcome first = Decide();
  EXPECT_EQ(first.revisit, std::vector<uint64_t>{0}) << "a first visit again, not a change of mind";
  for_node_1(0, 11);
  RegionBalancer::Outcome second = Decide();
  EXPECT_EQ(second.wanted, 1u);
  Drain();
  EXPECT_EQ(PagesOn(0, 1), kRegionPages);
  // Region 1, never visited again, keeps its vote; and memory that really
  // is shared (node 1, then node 0 again) is wary as before: the visit
  // back is a change of mind and nothing moves.
  for_node_1(2, 9);
  Decide();
  Visit(2, {0, 1});
  RegionBalancer::Outcome back = Decide();
  EXPECT_TRUE(back.revisit.empty());
  EXPECT_EQ(back.wanted, 0u);
}

TEST_F(RegionBalancerTest, SettledAndOwnedRegionsDoNotAge) {
  for (int visit = 0; visit < 2; ++visit) {
    Visit(0, {0, 1});  // settled, nobody's
    Decide();
  }
  Visit(1, {0});  // one visit, vCPU 0's: Follow's to handle
  Decide();
  EXPECT_EQ(balancer_.AgeVotes(), 0u);
}

// A region whose samples disagreed (two vCPUs on two nodes, before they
// were known to share it) has changed its mind and would wait for runs of
// agreement; once the two are found to be one group, whose samples all
// want the group's node, the region forgets that and moves on its next two
// visits. A settled region keeps its decision.
TEST_F(RegionBalancerTest, AGroupThatFormsForgivesItsRegionsTheirDisagreement) {
  auto disagree = [&](uint64_t region) {
    for (int i = 0; i < 4; ++i) {
      balancer_.AddSample(region * kRegionPages + 100 * i + 7, i % 2, 1ull << (i % 2), 0, false,
                          -1);
    }
  };
  auto agree = [&](uint64_t region, int sample) {  // the group's node, 1
    for (int i = 0; i < 4; ++i) {
      balancer_.AddSample(region * kRegionPages + 100 * i + sample, 1, 2, 0, false, -1);
    }
  };
  for (int visit = 0; visit < 3; ++visit) {
    disagree(1);
    disagree(2);
    Visit(0, {0});
    Decide();
  }
  Drain();
  ASSERT_EQ(PagesOn(0, 0), kRegionPages);
  // Region 2 goes on without being forgiven: two agreeing visits do not
  // move it.
  agree(2, 9);
  Decide();
  agree(2, 11);
  Decide();
  Drain();
  EXPECT_EQ(PagesOn(2, 1), 0u);

  EXPECT_EQ(balancer_.ForgetDisagreement(), 2u) << "regions 1 and 2; region 0 is settled";
  agree(1, 9);
  EXPECT_EQ(Decide().revisit, std::vector<uint64_t>{1}) << "a first visit: asks for a second";
  agree(1, 11);
  Decide();
  Drain();
  EXPECT_EQ(PagesOn(1, 1), kRegionPages);
  EXPECT_EQ(PagesOn(0, 0), kRegionPages) << "the settled region stayed";
}

}  // namespace
}  // namespace numavm
