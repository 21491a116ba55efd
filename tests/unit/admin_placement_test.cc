// An administrator's placement as constraints (policy/admin_placement.h)
// and the homes chosen within them (policy/home_node.h), on the shipped
// 4-node topology (CPUs 0-3, 4-7, 8-11, 12-15).
#include "balancer/policy/admin_placement.h"

#include <gtest/gtest.h>

#include "balancer/policy/home_node.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

Topology FourNodes() {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-4node.toml");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

std::vector<int> Cpus(int first, int last) {
  std::vector<int> out;
  for (int c = first; c <= last; ++c) out.push_back(c);
  return out;
}

TEST(AdminPlacementTest, UnpinnedAndUnboundIsUnconstrained) {
  const Topology t = FourNodes();
  CellConstraints c =
      ConstrainCell(t, {Cpus(0, 15), Cpus(0, 15)}, {0, 1}, {{"", "", "<numatune>"}});
  EXPECT_FALSE(c.constrained);
  EXPECT_EQ(c.allowed, std::vector<bool>(4, true));
  EXPECT_EQ(c.why, "");
  EXPECT_EQ(c.refused, "");
}

// <emulatorpin> narrows no home; the status says where those threads stay.
TEST(AdminPlacementTest, PinnedEmulatorThreadsAreNamedWithTheirNodes) {
  const Topology t = FourNodes();
  EXPECT_EQ(EmulatorPinNote(t, Cpus(0, 15)), "");
  EXPECT_EQ(EmulatorPinNote(t, Cpus(0, 17)), "");  // the host map lists offline CPUs too
  EXPECT_EQ(EmulatorPinNote(t, {1, 0}),
            "emulator threads stay on CPUs 0,1 (node 0), where the administrator pinned them");
  EXPECT_EQ(EmulatorPinNote(t, {3, 12}),
            "emulator threads stay on CPUs 3,12 (nodes 0,3), where the administrator pinned "
            "them");
  EXPECT_EQ(EmulatorPinNote(t, {40}),
            "emulator threads stay on CPUs 40 (no node of this host), where the administrator "
            "pinned them");
}

TEST(AdminPlacementTest, PinnedVcpusAndBoundMemoryNarrowTheNodes) {
  const Topology t = FourNodes();
  // vCPU 0 may run on node 2 and one CPU of node 3; memory on nodes 2-3.
  std::vector<int> v0 = Cpus(8, 11);
  v0.push_back(12);
  CellConstraints c =
      ConstrainCell(t, {v0, Cpus(0, 15)}, {0, 1},
                    {{"strict", "1-3", "<numatune>"}, {"strict", "2-3", "<memnode cellid='0'>"}});
  EXPECT_TRUE(c.constrained);
  EXPECT_EQ(c.allowed, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(c.why,
            "vCPU 0 may run only on CPUs 8,9,10,11,12; memory bound by <numatune> mode='strict' "
            "nodeset='1-3'; memory bound by <memnode cellid='0'> mode='strict' nodeset='2-3'");
  EXPECT_EQ(c.refused, "");
}

TEST(AdminPlacementTest, WhatCannotBePlannedWithinIsRefusedWithTheReason) {
  const Topology t = FourNodes();
  EXPECT_EQ(ConstrainCell(t, {Cpus(0, 15)}, {0}, {{"interleave", "0-1", "<numatune>"}}).refused,
            "its memory is interleaved by <numatune> mode='interleave' nodeset='0-1'");
  // A one-node "interleave" is a binding to that node.
  EXPECT_EQ(ConstrainCell(t, {Cpus(0, 15)}, {0}, {{"interleave", "3", "<numatune>"}}).refused, "");
  EXPECT_EQ(ConstrainCell(t, {Cpus(0, 1), Cpus(12, 13)}, {0, 1}, {}).refused,
            "no node satisfies all of: vCPU 0 may run only on CPUs 0,1; vCPU 1 may run only on "
            "CPUs 12,13");
  EXPECT_EQ(ConstrainCell(t, {Cpus(0, 1)}, {0}, {{"strict", "2", "<numatune>"}}).refused,
            "no node satisfies all of: vCPU 0 may run only on CPUs 0,1; memory bound by "
            "<numatune> mode='strict' nodeset='2'");
  EXPECT_NE(ConstrainCell(t, {Cpus(0, 15)}, {0}, {{"strict", "x", "<numatune>"}}).refused, "");
}

TEST(AdminPlacementTest, AVcpuIsPinnedToItsHomeOnlyWhereItMayRun) {
  const Topology t = FourNodes();
  EXPECT_EQ(PinWithin(t, {2, 3}, {8, 9, 12, 0}), (std::vector<int>{8, 9, 12}));
  EXPECT_EQ(PinWithin(t, {1}, Cpus(0, 15)), Cpus(4, 7));
  EXPECT_EQ(PinWithin(t, {0}, {8}), (std::vector<int>{8})) << "never outside what it may run on";
}

TEST(AdminPlacementTest, HomesAreChosenAmongTheAllowedNodesOnly) {
  const Topology t = FourNodes();
  // Its memory is all on node 0, but only nodes 2 and 3 are allowed.
  HomeDecision d =
      ChooseHome(t, {2, {1000, 0, 0, 10}, {}, {false, false, true, true}}, {0, 0, 0, 0});
  EXPECT_EQ(d.nodes, (std::vector<int>{3})) << "the allowed node with more of its memory";
  // A home on a node no longer allowed moves.
  HomeDecision moved =
      ChooseHome(t, {2, {1000, 0, 0, 0}, {0}, {false, true, false, false}}, {0, 0, 0, 0});
  EXPECT_EQ(moved.nodes, (std::vector<int>{1}));
  EXPECT_EQ(moved.reason, "not-allowed");
  // More vCPUs than allowed CPUs (the administrator's choice): the allowed
  // nodes, shared.
  HomeDecision crowded =
      ChooseHome(t, {8, {0, 0, 0, 0}, {}, {false, false, true, false}}, {0, 0, 0, 0});
  EXPECT_EQ(crowded.nodes, (std::vector<int>{2}));
  EXPECT_EQ(crowded.reason, "allowed-nodes");
}

}  // namespace
}  // namespace numavm
