#include "balancer/policy/home_node.h"

#include <gtest/gtest.h>

#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

Topology Load(const char* name) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + name);
  EXPECT_TRUE(t.ok());
  return *t;
}

TEST(HomeNode, AVmGoesWhereItsMemoryIs) {
  const Topology t = Load("topology-4node.toml");
  HomeDecision d = ChooseHome(t, {2, {0, 0, 1000, 0}, {}}, {0, 0, 0, 0});
  EXPECT_EQ(d.nodes, std::vector<int>{2});
  EXPECT_TRUE(d.changed);
  EXPECT_EQ(d.reason, "initial");
}

TEST(HomeNode, NewVmsSpreadOverFreeNodes) {
  const Topology t = Load("topology-2node.toml");
  // No memory anywhere yet; node 0 is full of another VM's vCPUs.
  HomeDecision d = ChooseHome(t, {2, {0, 0}, {}}, {4, 0});
  EXPECT_EQ(d.nodes, std::vector<int>{1});
}

TEST(HomeNode, TheCurrentHomeIsKeptUnlessClearlyWorse) {
  const Topology t = Load("topology-2node.toml");
  // Slightly more memory on node 1: not worth a move.
  HomeDecision keep = ChooseHome(t, {2, {900, 1000}, {0}}, {0, 0});
  EXPECT_EQ(keep.nodes, std::vector<int>{0});
  EXPECT_FALSE(keep.changed);
  // Almost all of it on node 1: move.
  HomeDecision move = ChooseHome(t, {2, {50, 1000}, {0}}, {0, 0});
  EXPECT_EQ(move.nodes, std::vector<int>{1});
  EXPECT_EQ(move.reason, "better");
}

TEST(HomeNode, AnOverloadedHomeIsLeft) {
  const Topology t = Load("topology-2node.toml");
  HomeDecision d = ChooseHome(t, {2, {1000, 0}, {0}}, {4, 0});
  EXPECT_EQ(d.nodes, std::vector<int>{1});
  EXPECT_EQ(d.reason, "current-overloaded");
}

TEST(HomeNode, ABigVmGetsNearNodes) {
  const Topology t = Load("topology-4node.toml");  // 4 CPUs per node, pairs 0-1 and 2-3
  HomeDecision d = ChooseHome(t, {6, {0, 0, 500, 500}, {}}, {0, 0, 0, 0});
  EXPECT_EQ(d.nodes, (std::vector<int>{2, 3}));
  HomeDecision none = ChooseHome(t, {64, {1, 1, 1, 1}, {}}, {0, 0, 0, 0});
  EXPECT_EQ(none.reason, "does-not-fit");
}

}  // namespace
}  // namespace numavm
