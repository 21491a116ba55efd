#include "balancer/topology/topology.h"

#include <gtest/gtest.h>

#include <map>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

// A fake /sys/devices/system/node tree.
class FakeSysfs final : public SysfsReader {
 public:
  std::map<std::string, std::string> files;
  absl::StatusOr<std::string> Read(absl::string_view path) const override {
    auto it = files.find(std::string(path));
    if (it == files.end()) return absl::NotFoundError(std::string(path));
    return it->second;
  }
};

std::string Meminfo(int node, uint64_t total_kb, uint64_t free_kb) {
  return absl::StrCat("Node ", node, " MemTotal:  ", total_kb, " kB\nNode ", node,
                      " MemFree:   ", free_kb, " kB\n");
}

TEST(ParseCpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(*ParseCpuList("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_TRUE(ParseCpuList("\n")->empty());
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("a").ok());
}

TEST(ReadTopology, OneNode) {
  FakeSysfs fs;
  fs.files = {{"online", "0\n"},
              {"node0/cpulist", "0-1\n"},
              {"node0/meminfo", Meminfo(0, 1024, 512)},
              {"node0/distance", "10\n"}};
  absl::StatusOr<Topology> t = ReadTopology(fs);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->node_count(), 1);
  EXPECT_EQ(t->nodes[0].cpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(t->nodes[0].memory_bytes, 1024u * 1024);
  EXPECT_EQ(t->nodes[0].free_bytes, 512u * 1024);
  EXPECT_EQ(t->distance[0][0], 10);
}

TEST(ReadTopology, FourNodesWithAsymmetricDistancesAndAMemoryOnlyNode) {
  FakeSysfs fs;
  fs.files = {{"online", "0-3\n"},
              {"node0/cpulist", "0-3\n"},
              {"node1/cpulist", "4-7\n"},
              {"node2/cpulist", "8-9,11\n"},  // CPU 10 offline
              {"node3/cpulist", "\n"},        // memory only
              {"node0/distance", "10 16 22 22\n"},
              {"node1/distance", "16 10 22 22\n"},
              {"node2/distance", "22 22 10 16\n"},
              {"node3/distance", "22 22 16 10\n"}};
  for (int n = 0; n < 4; ++n)
    fs.files[absl::StrCat("node", n, "/meminfo")] = Meminfo(n, 4096, 100 * n);
  absl::StatusOr<Topology> t = ReadTopology(fs);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->node_count(), 4);
  EXPECT_EQ(t->nodes[2].cpus, (std::vector<int>{8, 9, 11}));
  EXPECT_TRUE(t->nodes[3].cpus.empty());
  EXPECT_EQ(t->CpuNodeIds(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(t->distance[0][1], 16);
  EXPECT_EQ(t->distance[1][2], 22);
  EXPECT_EQ(t->distance[3][2], 16);
  EXPECT_EQ(t->nodes[3].free_bytes, 300u * 1024);
}

TEST(ReadTopology, SparseNodeIdsMapDistancesByPosition) {
  FakeSysfs fs;
  fs.files = {{"online", "0,2\n"},
              {"node0/cpulist", "0\n"},
              {"node2/cpulist", "1\n"},
              {"node0/distance", "10 21\n"},
              {"node2/distance", "21 10\n"}};
  absl::StatusOr<Topology> t = ReadTopology(fs);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->IndexOf(2), 1);
  EXPECT_EQ(t->IndexOf(1), -1);
  EXPECT_EQ(t->distance[0][1], 21);
  EXPECT_EQ(t->distance[1][1], 10);
}

TEST(ReadTopology, MissingTreeIsAnError) {
  FakeSysfs fs;
  EXPECT_FALSE(ReadTopology(fs).ok());
}

TEST(ReadHostTopology, ThisHostHasAtLeastOneNodeWithCpus) {
  absl::StatusOr<Topology> t = ReadHostTopology();
  if (!t.ok()) GTEST_SKIP() << "no NUMA sysfs: " << t.status();
  EXPECT_GE(t->node_count(), 1);
  EXPECT_FALSE(t->CpuNodeIds().empty());
}

}  // namespace
}  // namespace numavm
