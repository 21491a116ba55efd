#include "balancer/policy/static_placement.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(StaticPlan, HardSpreadsVcpusInBlocksAndBindsMemoryWithThem) {
  StaticPlan plan(StaticPlacement::kHard, 4, {0, 1});
  EXPECT_EQ(plan.VcpuNode(0), 0);
  EXPECT_EQ(plan.VcpuNode(1), 0);
  EXPECT_EQ(plan.VcpuNode(2), 1);
  EXPECT_EQ(plan.VcpuNode(3), 1);
  EXPECT_EQ(plan.MemoryNode(0b0011), 0);  // numa01 group 0
  EXPECT_EQ(plan.MemoryNode(0b1100), 1);  // numa01 group 1
  EXPECT_EQ(plan.MemoryNode(0b0100), 1);  // numa02 slice of vCPU 2
}

TEST(StaticPlan, InversePutsMemoryOnAnotherNode) {
  StaticPlan plan(StaticPlacement::kInverse, 4, {0, 1});
  EXPECT_EQ(plan.VcpuNode(3), 1);
  EXPECT_EQ(plan.MemoryNode(0b0011), 1);
  EXPECT_EQ(plan.MemoryNode(0b1100), 0);
}

TEST(StaticPlan, UsesTheGivenNodeIds) {
  StaticPlan plan(StaticPlacement::kHard, 2, {1, 3});
  EXPECT_EQ(plan.VcpuNode(0), 1);
  EXPECT_EQ(plan.VcpuNode(1), 3);
  StaticPlan inverse(StaticPlacement::kInverse, 2, {1, 3});
  EXPECT_EQ(inverse.MemoryNode(0b01), 3);
}

TEST(StaticPlan, OneNodeIsTrivial) {
  StaticPlan plan(StaticPlacement::kInverse, 3, {0});
  for (int v = 0; v < 3; ++v) EXPECT_EQ(plan.VcpuNode(v), 0);
  EXPECT_EQ(plan.MemoryNode(0b111), 0);
}

TEST(ParseStaticPlacement, KnownNamesOnly) {
  EXPECT_EQ(*ParseStaticPlacement("hard"), StaticPlacement::kHard);
  EXPECT_FALSE(ParseStaticPlacement("soft").ok());
}

}  // namespace
}  // namespace numavm
