#include "cli/placement_locality.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

#include "balancer/actuation/page_nodes.h"

namespace numavm {
namespace {

// This machine's pages all lie on its one node; the vCPUs' node ids are
// what a test gives, so "node 1" is a node none of the memory is on.
class LayoutPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t region[] = {kBytes};
    absl::StatusOr<GuestMemory> m = GuestMemory::Create(Backing::kAnon, region);
    ASSERT_TRUE(m.ok()) << m.status();
    memory_.emplace(std::move(*m));
    std::memset(memory_->HostPointer(GuestAddress{0}, kBytes), 1, kBytes);
    absl::StatusOr<std::vector<int>> nodes =
        QueryNodesOf(0, {memory_->HostPointer(GuestAddress{0}, 1)});
    ASSERT_TRUE(nodes.ok() && !nodes->empty() && (*nodes)[0] >= 0)
        << "move_pages cannot say where a page is";
    here_ = (*nodes)[0];
  }
  static constexpr uint64_t kBytes = 1 << 20;
  std::optional<GuestMemory> memory_;
  int here_ = 0;
};

TEST_F(LayoutPlacementTest, MemoryOfOneVcpuCountsWhereThatVcpuRuns) {
  const std::vector<LayoutHint> one = {{GuestAddress{0}, kBytes, 0b1}};
  EXPECT_EQ(LayoutPlacementLocality(one, *memory_, {here_}), 1.0);
  EXPECT_EQ(LayoutPlacementLocality(one, *memory_, {here_ + 1}), 0.0);
}

TEST_F(LayoutPlacementTest, AGroupSplitOverTwoNodesHasHalfItsMemoryPlaced) {
  // Two vCPUs share the memory, one on its node, one elsewhere: each finds
  // half of what it uses local - not all of it.
  const std::vector<LayoutHint> group = {{GuestAddress{0}, kBytes, 0b11}};
  EXPECT_EQ(LayoutPlacementLocality(group, *memory_, {here_, here_ + 1}), 0.5);
  EXPECT_EQ(LayoutPlacementLocality(group, *memory_, {here_, here_}), 1.0);
  // A vCPU whose node is unknown is left out of its group.
  EXPECT_EQ(LayoutPlacementLocality(group, *memory_, {here_, -1}), 1.0);
}

TEST_F(LayoutPlacementTest, HalvesOfTheMemoryWeighByTheirPages) {
  const std::vector<LayoutHint> two = {{GuestAddress{0}, kBytes / 4, 0b01},
                                       {GuestAddress{kBytes / 4}, 3 * kBytes / 4, 0b11}};
  LayoutPlacement p = MeasureLayoutPlacement(two, *memory_, {here_, here_ + 1});
  ASSERT_TRUE(p.locality.has_value());
  EXPECT_DOUBLE_EQ(*p.locality, 0.25 + 0.75 * 0.5);
  EXPECT_EQ(p.bytes_per_node[here_], kBytes);
}

}  // namespace
}  // namespace numavm
