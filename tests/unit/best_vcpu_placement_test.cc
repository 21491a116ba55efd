// The simulator's best with vCPUs moved (best_vcpu_placement.h): groups
// gathered where the nodes' CPUs allow, nothing moved where that gains
// nothing or there is no room.
#include "balancer/simulate/best_vcpu_placement.h"

#include <gtest/gtest.h>

#include <vector>

namespace numavm {
namespace {

Topology Nodes(int nodes, int cpus_each) {
  Topology t;
  int cpu = 0;
  for (int n = 0; n < nodes; ++n) {
    NumaNode node{n, {}, 1ull << 30, 1ull << 30};
    for (int c = 0; c < cpus_each; ++c) node.cpus.push_back(cpu++);
    t.nodes.push_back(node);
  }
  t.distance.assign(nodes, std::vector<int>(nodes, 20));
  for (int n = 0; n < nodes; ++n) t.distance[n][n] = 10;
  return t;
}

// Each group of vCPUs shares a stretch of 100 pages of its own, every
// member at the same rate.
WorkloadPhase Groups(const std::vector<std::vector<int>>& groups) {
  WorkloadPhase phase;
  uint64_t first = 0;
  for (const std::vector<int>& members : groups) {
    Segment seg{{first, 100}, {}, 0};
    for (int v : members) {
      seg.streams.push_back(static_cast<int>(phase.streams.size()));
      phase.streams.push_back({v, {first, 100}, 1000, 1});
      seg.visits_per_page += 10;
    }
    phase.segments.push_back(seg);
    first += 100;
  }
  return phase;
}

TEST(BestVcpuPlacement, GroupsSplitOverTwoNodesAreGatheredOneANode) {
  const VcpuPlacementBest best =
      BestVcpuPlacement(Nodes(2, 2), Groups({{0, 1}, {2, 3}}), {0, 1, 0, 1});
  EXPECT_DOUBLE_EQ(best.locality, 1.0);
  ASSERT_EQ(best.vcpu_nodes.size(), 4u);
  EXPECT_EQ(best.vcpu_nodes[0], best.vcpu_nodes[1]);
  EXPECT_EQ(best.vcpu_nodes[2], best.vcpu_nodes[3]);
  EXPECT_NE(best.vcpu_nodes[0], best.vcpu_nodes[2]);
}

TEST(BestVcpuPlacement, AVcpuMovesToANodeWithRoom) {
  const VcpuPlacementBest best = BestVcpuPlacement(Nodes(2, 2), Groups({{0, 1}}), {0, 1});
  EXPECT_DOUBLE_EQ(best.locality, 1.0);
  EXPECT_EQ(best.vcpu_nodes[0], best.vcpu_nodes[1]);
}

TEST(BestVcpuPlacement, ANodeOfOneCpuCannotHoldTwo) {
  // The NUMA lab's 4 nodes of one CPU each: a group of two cannot share a
  // node, so its memory is local to one of its two members at best.
  const std::vector<int> start = {0, 1, 2, 3};
  const VcpuPlacementBest best = BestVcpuPlacement(Nodes(4, 1), Groups({{0, 1}, {2, 3}}), start);
  EXPECT_DOUBLE_EQ(best.locality, 0.5);
  EXPECT_EQ(best.vcpu_nodes, start);
}

TEST(BestVcpuPlacement, MoreVcpusThanCpusShareTheNodesAlike) {
  // Four vCPUs on two CPUs: each node takes two, so the groups gather.
  const VcpuPlacementBest best =
      BestVcpuPlacement(Nodes(2, 1), Groups({{0, 1}, {2, 3}}), {0, 1, 0, 1});
  EXPECT_DOUBLE_EQ(best.locality, 1.0);
  EXPECT_EQ(best.vcpu_nodes[0], best.vcpu_nodes[1]);
  EXPECT_NE(best.vcpu_nodes[0], best.vcpu_nodes[2]);
}

TEST(BestVcpuPlacement, PrivateMemoryKeepsEveryVcpuWhereItStarted) {
  const std::vector<int> start = {0, 1, 0, 1};
  const VcpuPlacementBest best =
      BestVcpuPlacement(Nodes(2, 2), Groups({{0}, {1}, {2}, {3}}), start);
  EXPECT_DOUBLE_EQ(best.locality, 1.0);
  EXPECT_EQ(best.vcpu_nodes, start);
}

TEST(BestVcpuPlacement, GroupsOfFourGatherWhereANodeHasFourCpus) {
  // Two groups of four, each started two and two over two nodes.
  const std::vector<int> start = {0, 0, 1, 1, 0, 0, 1, 1};
  const VcpuPlacementBest best =
      BestVcpuPlacement(Nodes(2, 4), Groups({{0, 1, 2, 3}, {4, 5, 6, 7}}), start);
  EXPECT_DOUBLE_EQ(best.locality, 1.0);
  // On 4 nodes of 2 CPUs a group of four spans two nodes whatever moves.
  const std::vector<int> spread = {0, 0, 1, 1, 2, 2, 3, 3};
  const VcpuPlacementBest small =
      BestVcpuPlacement(Nodes(4, 2), Groups({{0, 1, 2, 3}, {4, 5, 6, 7}}), spread);
  EXPECT_DOUBLE_EQ(small.locality, 0.5);
}

TEST(BestVcpuPlacement, NoAccessesNoLocality) {
  const VcpuPlacementBest best = BestVcpuPlacement(Nodes(2, 2), WorkloadPhase{}, {0, 1});
  EXPECT_DOUBLE_EQ(best.locality, 0.0);
  EXPECT_EQ(best.vcpu_nodes, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace numavm
