#include "balancer/topology/topology_file.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(TopologyFile, ShippedTopologiesLoad) {
  for (auto [file, nodes] : {std::pair{"topology-2node.toml", 2}, {"topology-4node.toml", 4},
                             {"topology-8node.toml", 8}, {"topology-4node-1cpu.toml", 4}}) {
    absl::StatusOr<Topology> t =
        LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + file);
    ASSERT_TRUE(t.ok()) << file << ": " << t.status();
    EXPECT_EQ(t->node_count(), nodes) << file;
    for (const NumaNode& n : t->nodes) EXPECT_FALSE(n.cpus.empty()) << file;
  }
}

TEST(TopologyFile, FourNodesHaveNonUniformDistances) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-4node.toml");
  ASSERT_TRUE(t.ok());
  EXPECT_LT(t->distance[0][1], t->distance[0][2]);
  EXPECT_EQ(t->distance[2][3], t->distance[0][1]);
}

TEST(TopologyFile, DefaultsWithoutAMatrixAndMemoryOnlyNodes) {
  absl::StatusOr<Topology> t = ParseTopologyToml(R"(
[[node]]
id = 0
cpus = "0-1"
memory = "4G"
free = "1G"
[[node]]
id = 1
memory = "8G"
)", "t.toml");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->nodes[0].free_bytes, 1ull << 30);
  EXPECT_TRUE(t->nodes[1].cpus.empty());
  EXPECT_EQ(t->CpuNodeIds(), (std::vector<int>{0}));
  EXPECT_EQ(t->distance[0][1], 20);
}

TEST(TopologyFile, ErrorsNameTheProblem) {
  auto err = [](const char* text) {
    return std::string(ParseTopologyToml(text, "t.toml").status().message());
  };
  EXPECT_NE(err("[[node]]\nid = 0\n").find("memory"), std::string::npos);
  EXPECT_NE(err("[[node]]\nid = 0\nmemory = \"1G\"\n[[node]]\nid = 0\nmemory = \"1G\"\n")
                .find("listed twice"),
            std::string::npos);
  EXPECT_NE(err("[[node]]\nid = 0\nmemory = \"1G\"\n[distances]\nmatrix = [[10, 20]]\n")
                .find("entries"),
            std::string::npos);
  EXPECT_NE(err("[[node]]\nid = 0\nmemory = \"1G\"\n[distances]\nmatrix = [[12]]\n")
                .find("itself must be 10"),
            std::string::npos);
  EXPECT_NE(err("[[node]\n").find("t.toml: line 1"), std::string::npos);
  EXPECT_NE(err("x = 1\n").find("[[node]]"), std::string::npos);
}

}  // namespace
}  // namespace numavm
