#include "balancer/policy/vcpu_placement.h"

#include <gtest/gtest.h>

#include "balancer/policy/vcpu_groups.h"
#include "balancer/policy/vcpu_plan.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

Topology Load(const char* name) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + name);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(PreferredNode, FollowsTheMemory) {
  Topology t = Load("topology-2node.toml");
  EXPECT_EQ(PreferredNode(t, {10, 90}, -1), 1);
  EXPECT_EQ(PreferredNode(t, {90, 10}, -1), 0);
}

TEST(PreferredNode, HysteresisKeepsNearTies) {
  Topology t = Load("topology-2node.toml");
  EXPECT_EQ(PreferredNode(t, {100, 105}, 0), 0);
  EXPECT_EQ(PreferredNode(t, {100, 200}, 0), 1);
}

TEST(PreferredNode, DistancesMatterOnFourNodes) {
  Topology t = Load("topology-4node.toml");
  // Most faults on node 0 alone, but more on the near pair 2-3 together: a
  // distance-blind argmax says 0; the distance-aware score says the pair.
  std::vector<double> faults = {40, 0, 35, 35};
  int n = PreferredNode(t, faults, -1);
  EXPECT_TRUE(n == 2 || n == 3) << n;
}

TEST(PlaceGroups, NearNodesForEachGroupAABBNotABAB) {
  Topology t = Load("topology-4node.toml");
  // Two groups of 8 vCPUs, 4 CPUs per node: each needs two nodes.
  std::vector<GroupDemand> groups = {{8, {}}, {8, {}}};
  auto placement = PlaceGroups(t, groups, {4, 4, 4, 4});
  ASSERT_EQ(placement.size(), 2u);
  for (const auto& nodes : placement) {
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(t.distance[nodes[0]][nodes[1]], 16) << "a group was split across far nodes";
  }
  EXPECT_NE(placement[0], placement[1]);
}

TEST(PlaceGroups, AGroupGoesWhereItsMemoryIs) {
  Topology t = Load("topology-4node.toml");
  auto placement = PlaceGroups(t, {{8, {0, 0, 50, 50}}}, {4, 4, 4, 4});
  EXPECT_EQ(placement[0], (std::vector<int>{2, 3}));
  auto small = PlaceGroups(t, {{2, {0, 90, 0, 0}}}, {4, 4, 4, 4});
  EXPECT_EQ(small[0], (std::vector<int>{1}));
}

TEST(PlaceGroups, AFullNodeIsNeverChosen) {
  Topology t = Load("topology-2node.toml");
  auto placement = PlaceGroups(t, {{2, {0, 100}}}, {4, 0});
  EXPECT_EQ(placement[0], (std::vector<int>{0}));
  auto none = PlaceGroups(t, {{16, {}}}, {4, 4});
  EXPECT_TRUE(none[0].empty());
}

TEST(PlaceGroups, EightNodesKeepGroupsOnOneSocket) {
  Topology t = Load("topology-8node.toml");
  // Four groups of 4 vCPUs, 2 CPUs per node: each group should get a die
  // pair (distance 12).
  std::vector<GroupDemand> groups(4, GroupDemand{4, {}});
  auto placement = PlaceGroups(t, groups, std::vector<int>(8, 2));
  for (const auto& nodes : placement) {
    ASSERT_EQ(nodes.size(), 2u);
    EXPECT_EQ(t.distance[nodes[0]][nodes[1]], 12);
  }
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

GroupingInput FourVcpus() {
  GroupingInput in;
  in.shared.assign(4, std::vector<double>(4, 0.0));
  in.samples.assign(4, 1000.0);
  return in;
}

std::vector<int> Group(const GroupingInput& in) {
  std::vector<std::vector<bool>> linked;
  return GroupVcpus(in, {}, linked);
}

TEST(VcpuGroups, VcpusThatFollowEachOtherOnPagesAreGrouped) {
  GroupingInput in = FourVcpus();
  in.shared[0][1] = in.shared[1][0] = 400;  // numa01: two pairs
  in.shared[2][3] = in.shared[3][2] = 400;
  in.shared[1][2] = in.shared[2][1] = 10;  // the guest's bookkeeping pages: noise
  EXPECT_EQ(Group(in), (std::vector<int>{0, 0, 2, 2}));
}

TEST(VcpuGroups, PrivateVcpusStayAlone) {
  GroupingInput in = FourVcpus();
  in.shared[0][3] = in.shared[3][0] = 100;  // 10% of their samples: bookkeeping pages
  EXPECT_EQ(Group(in), (std::vector<int>{0, 1, 2, 3}));
}

TEST(VcpuGroups, TooFewSamplesLinkNobody) {
  GroupingInput in = FourVcpus();
  in.samples = {10, 10, 10, 10};
  in.shared[0][1] = in.shared[1][0] = 10;  // all of them, but only ten
  EXPECT_EQ(Group(in), (std::vector<int>{0, 1, 2, 3}));
}

TEST(VcpuGroups, LinksHaveHysteresis) {
  GroupingInput in = FourVcpus();
  std::vector<std::vector<bool>> linked;
  in.shared[0][1] = in.shared[1][0] = 200;  // 20%: joins
  EXPECT_EQ(GroupVcpus(in, {}, linked), (std::vector<int>{0, 0, 2, 3}));
  // A quieter period (10%) does not split the group...
  in.shared[0][1] = in.shared[1][0] = 100;
  EXPECT_EQ(GroupVcpus(in, {}, linked), (std::vector<int>{0, 0, 2, 3}));
  // ... nor would the same evidence have formed it.
  std::vector<std::vector<bool>> fresh;
  EXPECT_EQ(GroupVcpus(in, {}, fresh), (std::vector<int>{0, 1, 2, 3}));
  // Hardly any sharing left (2%): it splits.
  in.shared[0][1] = in.shared[1][0] = 20;
  EXPECT_EQ(GroupVcpus(in, {}, linked), (std::vector<int>{0, 1, 2, 3}));
}

TEST(VcpuGroups, GuestCellsAreGroupsFromTheStart) {
  GroupingInput in = FourVcpus();
  in.cells = {{0, 2}, {1, 3}};
  EXPECT_EQ(Group(in), (std::vector<int>{0, 1, 0, 1}));
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// The plan is pure: the same evidence gives the same homes, each with its
// reason.
TEST(VcpuPlan, PrivateVcpusGoToTheirMemoryWithinTheirFairShare) {
  Topology t = Load("topology-2node.toml");  // 4 CPUs a node
  // Four private vCPUs, all their memory on node 1, where other work keeps
  // 3 CPUs busy: the VM does not fit it, so a fair share (2) each.
  std::vector<std::vector<double>> faults(4, {0, 100});
  VcpuPlan plan =
      PlanVcpus({&t, &faults, {0, 1, 2, 3}, {-1, -1, -1, -1}, {0, 0, 0, 0}, 0, {0.0, 3.0}});
  int on1 = 0;
  for (int n : plan.nodes) on1 += n == 1;
  EXPECT_EQ(on1, 2) << "no node takes more than its fair share of private vCPUs";
  ASSERT_EQ(plan.moves.size(), 4u);
  EXPECT_EQ(plan.moves[0].reason, VcpuMoveReason::kPreferred);
  EXPECT_TRUE(plan.moves[0].changes_node);
  EXPECT_EQ(plan.moves[3].reason, VcpuMoveReason::kWhereItRuns);
  EXPECT_FALSE(plan.moves[3].changes_node);
  EXPECT_EQ(plan.decisions[Decision::kVcpuMove], 2u);
  EXPECT_EQ(plan.decisions[Decision::kVcpuHome], 2u);
}

// A VM that fits a node - its vCPUs in the CPUs other work leaves free, its
// memory in the node's memory - gathers on the node with its memory.
TEST(VcpuPlan, AVmThatFitsANodeGathersWithItsMemory) {
  Topology t = Load("topology-2node.toml");  // 4 CPUs and 16 GiB a node
  std::vector<std::vector<double>> faults(4, {0, 100});
  const uint64_t gib = 1ull << 30;
  VcpuPlan plan = PlanVcpus({&t, &faults, {0, 1, 2, 3}, {-1, -1, -1, -1}, {0, 0, 0, 0}, 8 * gib});
  EXPECT_EQ(plan.nodes, (std::vector<int>{1, 1, 1, 1}));
  EXPECT_EQ(plan.decisions[Decision::kVmFitsNode], 1u);
  EXPECT_EQ(plan.decisions[Decision::kVcpuMove], 4u);
  for (const VcpuMove& m : plan.moves) EXPECT_EQ(m.reason, VcpuMoveReason::kPreferred);
  // Other work under half a CPU leaves room for it.
  EXPECT_EQ(
      PlanVcpus({&t, &faults, {0, 1, 2, 3}, {-1, -1, -1, -1}, {0, 0, 0, 0}, 8 * gib, {0.0, 0.4}})
          .nodes,
      (std::vector<int>{1, 1, 1, 1}));
  // Memory larger than the node's: a fair share each.
  VcpuPlan big = PlanVcpus({&t, &faults, {0, 1, 2, 3}, {-1, -1, -1, -1}, {0, 0, 0, 0}, 17 * gib});
  EXPECT_EQ(big.nodes, (std::vector<int>{1, 1, 0, 0}));
  EXPECT_EQ(big.decisions[Decision::kVmFitsNode], 0u);
  // More vCPUs than a node's CPUs: a fair share each.
  std::vector<std::vector<double>> five(5, {0, 100});
  VcpuPlan wide =
      PlanVcpus({&t, &five, {0, 1, 2, 3, 4}, std::vector<int>(5, -1), std::vector<int>(5, 0), gib});
  EXPECT_EQ(wide.nodes, (std::vector<int>{1, 1, 1, 0, 0}));
}

// Once gathered, the VM stays while other work on its node wavers below a
// CPU and a half (the fit_keep hysteresis), and gives up vCPUs to the other
// node once the rest no longer fit.
TEST(VcpuPlan, AGatheredVmMakesRoomWhenItsNodeGetsBusy) {
  Topology t = Load("topology-2node.toml");
  std::vector<std::vector<double>> faults(4, {0, 100});
  const std::vector<int> on1(4, 1);
  VcpuPlan wavering = PlanVcpus({&t, &faults, {0, 1, 2, 3}, on1, on1, 0, {0.0, 0.9}});
  EXPECT_TRUE(wavering.moves.empty());
  EXPECT_EQ(wavering.nodes, on1);
  // Without a home there yet, the same 0.9 CPU leaves no room for four.
  EXPECT_EQ(PlanVcpus({&t, &faults, {0, 1, 2, 3}, {-1, -1, -1, -1}, on1, 0, {0.0, 0.9}}).nodes,
            (std::vector<int>{1, 1, 0, 0}));
  VcpuPlan busy = PlanVcpus({&t, &faults, {0, 1, 2, 3}, on1, on1, 0, {0.0, 1.6}});
  EXPECT_EQ(busy.nodes, (std::vector<int>{0, 0, 1, 1}));
  ASSERT_EQ(busy.moves.size(), 2u);
  EXPECT_EQ(busy.moves[0].reason, VcpuMoveReason::kBestRoom);
  EXPECT_TRUE(busy.moves[0].changes_node);
  EXPECT_EQ(busy.decisions[Decision::kVcpuMove], 2u);
}

TEST(VcpuPlan, FreeCpusTakesNoNonsense) {
  Topology t = Load("topology-2node.toml");
  EXPECT_EQ(FreeCpus(t, {}, 0), 4);
  EXPECT_EQ(FreeCpus(t, {1.49, 2.5}, 0), 3);
  EXPECT_EQ(FreeCpus(t, {1.49, 2.5}, 1), 1);
  EXPECT_EQ(FreeCpus(t, {1e300, -1e300}, 0), 0);
  EXPECT_EQ(FreeCpus(t, {1e300, -1e300}, 1), 4);
  EXPECT_EQ(FreeCpus(t, {std::nan(""), 0}, 0), 4);
}

TEST(VcpuPlan, AGroupIsPlacedTogetherThenKept) {
  Topology t = Load("topology-2node.toml");
  // vCPUs 0-1 share memory on node 1 but run on both nodes.
  std::vector<std::vector<double>> faults(2, {10, 90});
  VcpuPlan plan = PlanVcpus({&t, &faults, {0, 0}, {-1, -1}, {0, 1}});
  ASSERT_FALSE(plan.moves.empty());
  EXPECT_EQ(plan.nodes, (std::vector<int>{1, 1}));
  EXPECT_EQ(plan.moves[0].reason, VcpuMoveReason::kGroupPlaced);
  // Once homed there, the same evidence changes nothing.
  VcpuPlan again = PlanVcpus({&t, &faults, {0, 0}, {1, 1}, {1, 1}});
  EXPECT_TRUE(again.moves.empty());
  // A group where it runs, scoring within the keep hysteresis, stays there
  // and gets homes in place.
  std::vector<std::vector<double>> even(2, {50, 52});
  VcpuPlan kept = PlanVcpus({&t, &even, {0, 0}, {-1, -1}, {0, 0}});
  EXPECT_EQ(kept.nodes, (std::vector<int>{0, 0}));
  ASSERT_EQ(kept.moves.size(), 2u);
  EXPECT_EQ(kept.moves[0].reason, VcpuMoveReason::kGroupKept);
}

TEST(VcpuPlan, AFullPreferredNodeIsCountedNotOverfilled) {
  Topology t = Load("topology-4node-1cpu.toml");  // one CPU a node
  std::vector<std::vector<double>> faults(2, {100, 0, 0, 0});
  VcpuPlan plan = PlanVcpus({&t, &faults, {0, 1}, {0, 2}, {0, 2}});
  EXPECT_EQ(plan.nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(plan.decisions[Decision::kVcpuNodeFull], 1u);
}

}  // namespace
}  // namespace numavm
