// A vCPU group's memory follows the group over several nodes
// (RegionBalancer::FollowGroup with the nodes it may stay on): a pair held
// on node 0 (the NUMA lab's first touch in a cpuset) and let go over two
// one-CPU nodes takes its memory to one of them, unless it is on one of
// them already.
#include <gtest/gtest.h>

#include <memory>

#include "balancer/region_balancer.h"
#include "balancer/replay/model_placement_view.h"
#include "balancer/vm_balancer.h"
#include "tests/unit/region_test_helpers.h"

namespace numavm {
namespace {

constexpr uint64_t kPages = 2 * kRegionPages;  // two regions

class GroupFollowTest : public RegionModelTest<kPages> {
 protected:
  void SetUp() override {
    for (int n = 0; n < 4; ++n) {
      topology_.nodes.push_back(NumaNode{n, {n}, 1 << 30, 1 << 30});
      topology_.distance.push_back({20, 20, 20, 20});
      topology_.distance.back()[n] = 10;
    }
    view_ = std::make_unique<ModelPlacementView>(topology_, kPages, std::vector<int>{0, 0, 0, 0},
                                                 nullptr);
    view_->TouchRange({0, kPages}, 0);
    // Group 0 (on node 0) settles region 0 in place on two visits; region
    // 1 is on its way (one visit).
    for (int visit = 0; visit < 2; ++visit) {
      for (int i = 0; i < 4; ++i) {
        balancer_.AddSample(100 * i + 7, 0, 1, 0, false, -1, 0);
        if (visit == 0) balancer_.AddSample(kRegionPages + 100 * i + 7, 0, 1, 0, false, -1, 0);
      }
      balancer_.Decide(true, false, decisions_, nullptr);
    }
    Drain();
  }
};

TEST_F(GroupFollowTest, MemoryOnOneOfTheGroupsNodesStays) {
  uint64_t retargeted = 0;
  // Over nodes 0 and 1, primary 1: node 0 is one of its nodes.
  EXPECT_EQ(balancer_.FollowGroup(0, 1, 0b0011, true, decisions_, nullptr, &retargeted), 0u);
  EXPECT_EQ(retargeted, 0u);
  Drain();
  EXPECT_EQ(PagesOn(0, 0), kRegionPages);
  EXPECT_EQ(view_->page_moves(), 0u);
}

TEST_F(GroupFollowTest, MemoryOnNoneOfTheGroupsNodesGoesToItsPrimary) {
  uint64_t retargeted = 0;
  // Over nodes 2 and 3, primary 2: the settled region moves there, and so
  // does the settling one, on its one visit's word (its next visit checks).
  EXPECT_EQ(balancer_.FollowGroup(0, 2, 0b1100, true, decisions_, nullptr, &retargeted), 2u);
  EXPECT_EQ(retargeted, 0u);
  Drain();
  EXPECT_EQ(PagesOn(0, 2), kRegionPages);
  EXPECT_EQ(PagesOn(1, 2), kRegionPages);
  EXPECT_EQ(view_->page_moves(), 2 * kRegionPages);
  EXPECT_EQ(decisions_[Decision::kRegionFollow], 2u);
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// The NUMA lab's numa01 on 4 one-CPU nodes, through the whole balancer: two
// pairs of vCPUs, each sharing 8 regions, first touched on node 0 while a
// cpuset held every vCPU there. Let go, the vCPUs run on four nodes, a pair
// over two of them: the regions of a pair that has a vCPU on node 0 stay;
// the other pair's follow it in the period it was let go, with no visit of
// their own (the scan may need a sweep to come back to them).
class GroupFollowVmTest : public testing::Test {
 protected:
  static constexpr uint64_t kRegions = 16;
  static Topology FourOneCpuNodes() {
    Topology topology;
    for (int n = 0; n < 4; ++n) {
      topology.nodes.push_back(NumaNode{n, {n}, 1 << 30, 1 << 30});
      topology.distance.push_back({20, 20, 20, 20});
      topology.distance.back()[n] = 10;
    }
    return topology;
  }
  void Start(absl::Duration warmup) {
    view_.TouchRange({0, kRegions * kRegionPages}, 0);
    view_.Confine(0);
    BalancerConfig config;
    config.warmup = warmup;
    balancer_ = std::make_unique<VmBalancer>(BalanceMode::kOn, topology_, 4,
                                             kRegions * kRegionPages, view_, config);
  }
  // Pair p (vCPUs 2p, 2p+1) uses regions 8p..8p+7; each period visits every
  // region, four probes each, the pair's vCPUs in turn.
  absl::Status VisitAll(int period) {
    AccessBatch batch;
    for (uint64_t r = 0; r < kRegions; ++r) {
      const int pair = static_cast<int>(r / 8);
      for (int p = 0; p < 4; ++p) {
        const int vcpu = 2 * pair + (p + period) % 2;
        batch.push_back(
            {r * kRegionPages + 16 * p + 64 * (period % 4), vcpu, AccessKind::kWrite, {}});
      }
    }
    return balancer_->OnBatch(batch, absl::Seconds(period)).status();
  }
  // Each pair's regions are on one of its vCPUs' nodes, or stayed on node
  // 0 where the pair has a vCPU there; returns how many regions moved.
  int ExpectEachPairsMemoryWithIt() {
    const std::vector<int> nodes = view_.VcpuNodes();
    int moved = 0;
    for (int pair = 0; pair < 2; ++pair) {
      const int a = nodes[2 * pair], b = nodes[2 * pair + 1];
      EXPECT_NE(a, b) << "one CPU a node";
      const bool on_zero = a == 0 || b == 0;
      for (uint64_t r = 8u * pair; r < 8u * pair + 8; ++r) {
        const int node = view_.NodeOf(r * kRegionPages + 1);
        moved += node != 0;
        if (on_zero) {
          EXPECT_EQ(node, 0) << "pair " << pair << " region " << r << ": moved needlessly";
        } else {
          EXPECT_TRUE(node == a || node == b)
              << "pair " << pair << " region " << r << " on " << node;
        }
      }
    }
    return moved;
  }

  Topology topology_ = FourOneCpuNodes();
  ModelPlacementView view_{topology_, kRegions* kRegionPages, {1, 0, 2, 3}, nullptr};
  std::unique_ptr<VmBalancer> balancer_;
};

TEST_F(GroupFollowVmTest, APairLetGoOverTwoNodesTakesItsMemoryAlong) {
  Start(absl::ZeroDuration());
  int period = 0;
  for (; period < 8; ++period) ASSERT_TRUE(VisitAll(period).ok());
  BalancerCounters c = balancer_->counters();
  ASSERT_EQ(c.groups, 2) << "the pairs are found while held";
  EXPECT_EQ(c.pages_migrated, 0u);
  // Let go: no samples this period, only the vCPUs' new nodes.
  view_.Confine(-1);
  ASSERT_TRUE(balancer_->OnBatch({}, absl::Seconds(period)).ok());
  c = balancer_->counters();
  EXPECT_EQ(ExpectEachPairsMemoryWithIt(), 8);
  EXPECT_EQ(c.decisions[Decision::kRegionFollow], 8u);
  EXPECT_EQ(c.pages_migrated, 8 * kRegionPages);
}

// The lab as it was: the workload's first samples come in a burst as its
// first touch ends, two seconds before the cpuset widens - inside the
// balancer's warm-up, so the pairs and their memory are first seen on node
// 0 but the groups get no nodes of their own until the warm-up is over, by
// which time they run over four. Their memory follows all the same, at the
// first period after the warm-up.
TEST_F(GroupFollowVmTest, APairFirstSeenInTheWarmUpTakesItsMemoryAlong) {
  Start(absl::Seconds(4));
  ASSERT_TRUE(VisitAll(0).ok());
  ASSERT_TRUE(VisitAll(1).ok());
  BalancerCounters c = balancer_->counters();
  ASSERT_EQ(c.groups, 2) << "the pairs are found in the burst";
  view_.Confine(-1);  // let go at 2 s
  ASSERT_TRUE(balancer_->OnBatch({}, absl::Seconds(2)).ok());
  ASSERT_TRUE(balancer_->OnBatch({}, absl::Seconds(3)).ok());
  EXPECT_EQ(balancer_->counters().pages_migrated, 0u) << "nothing moves in the warm-up";
  ASSERT_TRUE(balancer_->OnBatch({}, absl::Seconds(4)).ok());
  c = balancer_->counters();
  EXPECT_EQ(ExpectEachPairsMemoryWithIt(), 8);
  EXPECT_EQ(c.decisions[Decision::kRegionFollow], 8u);
}

}  // namespace
}  // namespace numavm
