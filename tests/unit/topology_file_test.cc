#include "balancer/topology/topology_file.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(TopologyFile, ShippedTopologiesLoad) {
  for (auto [file, nodes] : {std::pair{"topology-2node.toml", 2},
                             {"topology-4node.toml", 4},
                             {"topology-8node.toml", 8},
                             {"topology-4node-1cpu.toml", 4}}) {
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
)",
                                                 "t.toml");
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
  EXPECT_NE(
      err("[[node]]\nid = 0\nmemory = \"1G\"\n[distances]\nmatrix = [[10, 20]]\n").find("entries"),
      std::string::npos);
  EXPECT_NE(err("[[node]]\nid = 0\nmemory = \"1G\"\n[distances]\nmatrix = [[12]]\n")
                .find("itself must be 10"),
            std::string::npos);
  EXPECT_NE(err("[[node]\n").find("t.toml: line 1"), std::string::npos);
  EXPECT_NE(err("[distances]\n").find("needs [[node]] tables"), std::string::npos);
}

// What used to be accepted silently (and changed replay's results) is an
// error naming the key, the file and the line.
TEST(TopologyFile, RefusesWhatItCannotMean) {
  auto err = [](const std::string& text) {
    absl::StatusOr<Topology> t = ParseTopologyToml(text, "t.toml");
    return t.ok() ? std::string("accepted") : std::string(t.status().message());
  };
  const std::string node0 = "[[node]]\nid = 0\ncpus = \"0\"\nmemory = \"1G\"\n";
  const std::string node1 = "[[node]]\nid = 1\ncpus = \"1\"\nmemory = \"1G\"\n";
  struct Case {
    std::string text;
    const char* message;
  } cases[] = {
      {"x = 1\n" + node0, "t.toml:1: unknown key 'x' in the top level"},
      {"[[node]]\nid = 0\ncpu = \"0\"\nmemory = \"1G\"\n",
       "t.toml:3: unknown key 'cpu' in [[node]] #1"},
      {node0 + "[distance]\nmatrix = [[10]]\n", "unknown key 'distance'"},
      {node0 + "[distances]\nmatrx = [[10]]\n", "unknown key 'matrx' in [distances]"},
      {"[[node]]\nid = 4294967296\nmemory = \"1G\"\n",
       "t.toml:2: [[node]] #1: id = 4294967296: want 0-1023"},
      {"[[node]]\nid = \"0\"\nmemory = \"1G\"\n", "id must be an integer"},
      {"[[node]]\nid = 0\ncpus = 5\nmemory = \"1G\"\n", "t.toml:3: [[node]] #1: cpus"},
      {"[[node]]\nid = 0\ncpus = \"0-2147483647\"\nmemory = \"1G\"\n", "ids go up to 8191"},
      {"[[node]]\nid = 0\ncpus = \"0,0\"\nmemory = \"1G\"\n", "names 0 twice"},
      {node0 + "[[node]]\nid = 1\ncpus = \"0\"\nmemory = \"1G\"\n",
       "CPU 0 is in more than one node"},
      {"[[node]]\nid = 0\nmemory = \"0\"\n", "t.toml:3: [[node]] #1: memory must be more than 0"},
      {"[[node]]\nid = 0\nmemory = \"1G\"\nfree = \"2G\"\n", "free is more than memory"},
      {node0 + node1 + "[distances]\nmatrix = [[10, 20], [30, 10]]\n", "must be symmetric"},
      {node0 + node1 + "[distances]\nmatrix = [[10, 4294967316], [4294967316, 10]]\n",
       "distances must be integers 10-255"},
      {node0 + node1 + "[distances]\nmatrix = [[10, 256], [256, 10]]\n",
       "distances must be integers 10-255"},
      {"distances = 5\n" + node0, "t.toml:1: distances must be a table"},
  };
  for (const Case& c : cases) {
    EXPECT_NE(err(c.text).find(c.message), std::string::npos) << c.text << "\n-> " << err(c.text);
  }
}

TEST(TopologyFile, FilesThatAreNotRegularAreRefusedBeforeReading) {
  absl::StatusOr<Topology> t = LoadTopologyFile("/dev/zero");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "topology /dev/zero: not a regular file");
}

}  // namespace
}  // namespace numavm
