#include "balancer/actuation/pfn_nodes.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "balancer/actuation/page_nodes.h"
#include "gtest/gtest.h"

namespace numavm {
namespace {

// Two nodes as a 2-node host shows them: node 0 with DMA, DMA32 and Normal,
// node 1 with Normal only, an empty Movable zone on each.
constexpr char kTwoNodes[] = R"(Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 565
  pages free     3840
        spanned  4095
        present  3998
  start_pfn:           1
Node 0, zone    DMA32
  pages free     772789
        spanned  1044480
  start_pfn:           4096
Node 0, zone   Normal
        spanned  524288
  start_pfn:           1048576
Node 0, zone  Movable
        spanned  0
        present  0
Node 1, zone   Normal
  pages free     500000
        spanned  524288
  start_pfn:           1572864
Node 1, zone  Movable
        spanned  0
)";

TEST(PfnNodeMapTest, FramesMapToTheNodeWhoseZoneSpansThem) {
  absl::StatusOr<PfnNodeMap> map = PfnNodeMap::Parse(kTwoNodes);
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_EQ(map->zones(), 4u);  // the empty Movable zones are left out
  EXPECT_EQ(map->NodeOf(0), -1);
  EXPECT_EQ(map->NodeOf(1), 0);
  EXPECT_EQ(map->NodeOf(5000), 0);
  EXPECT_EQ(map->NodeOf(1572863), 0);
  EXPECT_EQ(map->NodeOf(1572864), 1);
  EXPECT_EQ(map->NodeOf(2097151), 1);
  EXPECT_EQ(map->NodeOf(2097152), -1);  // past the last zone
}

TEST(PfnNodeMapTest, TextWithoutZonesIsAnError) {
  EXPECT_FALSE(PfnNodeMap::Parse("").ok());
  EXPECT_FALSE(PfnNodeMap::Parse("Node x, zone DMA\n").ok());
}

TEST(PfnNodeMapTest, ThisMachineHasNodeZeroFrames) {
  absl::StatusOr<PfnNodeMap> map = PfnNodeMap::FromSystem();
  ASSERT_TRUE(map.ok()) << map.status();
  EXPECT_GE(map->zones(), 1u);
}

// A page move_pages could not see (-ENOENT) is looked up in pagemap: a
// touched page resolves to its node, an untouched one stays unknown.
TEST(PfnNodeMapTest, UnseenPagesResolveThroughPagemap) {
  if (geteuid() != 0) GTEST_SKIP() << "page frames in pagemap need CAP_SYS_ADMIN";
  absl::StatusOr<PfnNodeMap> map = PfnNodeMap::FromSystem();
  ASSERT_TRUE(map.ok()) << map.status();
  const size_t page = 4096;
  void* mem = mmap(nullptr, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* bytes = static_cast<char*>(mem);
  bytes[0] = 1;  // pages 0 and 1 touched, 2 and 3 not
  bytes[page] = 1;
  std::vector<void*> pages = {bytes, bytes + page, bytes + 2 * page, bytes + 3 * page};
  std::vector<int> status = {-ENOENT, 0, -ENOENT, -ENOENT};
  absl::StatusOr<uint64_t> resolved = ResolveUnseenPages(0, pages, *map, status);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(*resolved, 1u);
  EXPECT_EQ(status[0], 0);  // this machine's one node
  EXPECT_EQ(status[1], 0);  // already known: left as it was
  EXPECT_EQ(status[2], -ENOENT);
  EXPECT_EQ(status[3], -ENOENT);
  // The query every report uses answers the same.
  absl::StatusOr<std::vector<int>> where = QueryNodesOf(0, pages);
  ASSERT_TRUE(where.ok()) << where.status();
  EXPECT_EQ((*where)[0], 0);
  EXPECT_LT((*where)[2], 0);
  munmap(mem, 4 * page);
}

}  // namespace
}  // namespace numavm
