// Guest cells as the balancer's evidence (sampling/cell_samples.h) and the
// VmBalancer that libvirt domains go through (homes chosen outside it):
// each cell's memory ends on the node its vCPUs run on, moved as regions,
// none twice. Deterministic: a placement model of the shipped topologies.
#include <gtest/gtest.h>

#include <set>

#include "balancer/replay/model_placement_view.h"
#include "balancer/sampling/cell_samples.h"
#include "balancer/topology/topology_file.h"
#include "balancer/vm_balancer.h"

namespace numavm {
namespace {

TEST(CellSamplesTest, EveryRegionOfEveryCellIsVisitedByItsOwnVcpusInTurn) {
  // 10 MiB and 4 MiB + 1 page: 5 and 3 regions (the last one of a page),
  // one region of each a call.
  CellSamples s({{0, 2560, {0, 1}}, {3072, 1025, {2}}});
  std::set<uint64_t> regions;
  std::set<int> cell0_vcpus;
  for (int call = 0; call < 5; ++call) {
    for (const AccessSample& a : s.Next(2, absl::Seconds(call))) {
      EXPECT_EQ(a.at, absl::Seconds(call));
      if (a.gfn < 2560) {
        cell0_vcpus.insert(a.vcpu);
      } else {
        ASSERT_GE(a.gfn, 3072u);
        ASSERT_LT(a.gfn, 3072u + 1025u) << "inside its cell";
        EXPECT_EQ(a.vcpu, 2);
      }
      regions.insert(a.gfn / CellSamples::kRegionPages);
    }
  }
  EXPECT_EQ(cell0_vcpus, (std::set<int>{0, 1}));
  // Cell 0's 5 regions and cell 1's 3 (regions 6, 7, 8 of the gfn space).
  EXPECT_EQ(regions, (std::set<uint64_t>{0, 1, 2, 3, 4, 6, 7, 8}));
}

TEST(CellSamplesTest, ACellWithoutVcpusIsNotSampled) {
  CellSamples s({{0, 512, {}}, {512, 512, {0}}});
  for (const AccessSample& a : s.Next(8, {})) EXPECT_GE(a.gfn, 512u);
}

struct CellCase {
  std::string topology;
  // Per cell: its vCPUs' node (index) and the node its memory was first
  // touched on.
  std::vector<std::pair<int, int>> cells;
};

class CellBalancingTest : public ::testing::TestWithParam<CellCase> {};

TEST_P(CellBalancingTest, EachCellsMemoryFollowsItsVcpusAsRegionsAndMovesOnce) {
  const CellCase& c = GetParam();
  absl::StatusOr<Topology> topology = LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) +
                                                       "/configs/topology-" + c.topology + ".toml");
  ASSERT_TRUE(topology.ok()) << topology.status();
  // 64 MiB and 2 vCPUs per cell.
  constexpr uint64_t kCellPages = 16384;
  const int cells = static_cast<int>(c.cells.size());
  std::vector<GuestCell> guest;
  std::vector<int> vcpu_nodes;
  for (int i = 0; i < cells; ++i) {
    guest.push_back({i * kCellPages, kCellPages, {2 * i, 2 * i + 1}});
    vcpu_nodes.insert(vcpu_nodes.end(), 2, c.cells[i].first);
  }
  ModelPlacementView view(*topology, cells * kCellPages, vcpu_nodes, nullptr);
  for (int i = 0; i < cells; ++i) {
    view.TouchRange({i * kCellPages, kCellPages}, c.cells[i].second);
  }
  BalancerConfig config;
  for (const GuestCell& g : guest) config.cells.push_back(g.vcpus);
  config.place_vcpus = false;
  config.warmup = absl::ZeroDuration();
  VmBalancer balancer(BalanceMode::kOn, *topology, 2 * cells, cells * kCellPages, view, config);
  CellSamples samples(guest);

  // 16 regions a round: each cell's 32 regions are visited every 2 * cells
  // rounds; a region moves on its second agreeing visit.
  for (int round = 0; round < 8 * cells; ++round) {
    ASSERT_TRUE(
        balancer.OnBatch(samples.Next(16, absl::Seconds(round)), absl::Seconds(round)).ok());
  }
  uint64_t remote = 0;
  for (int i = 0; i < cells; ++i) {
    for (uint64_t g = i * kCellPages; g < (i + 1) * kCellPages; ++g) {
      remote += view.NodeOf(g) != c.cells[i].first ? 1 : 0;
    }
  }
  EXPECT_EQ(remote, 0u) << "every cell's memory is on its vCPUs' node";
  uint64_t misplaced = 0;
  for (const auto& [vcpus_on, memory_on] : c.cells)
    misplaced += vcpus_on != memory_on ? kCellPages : 0;
  EXPECT_EQ(view.page_moves(), misplaced) << "exactly the misplaced pages moved, none twice";
  EXPECT_EQ(view.vcpu_pins(), 0u) << "homes are the caller's";
  const BalancerCounters counters = balancer.counters();
  EXPECT_EQ(counters.pages_migrated, misplaced);
  EXPECT_EQ(counters.regions_moved, misplaced / CellSamples::kRegionPages) << "as whole regions";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CellBalancingTest,
    ::testing::Values(CellCase{"2node", {{0, 0}, {1, 0}}},  // first touch all on node 0
                      CellCase{"2node", {{1, 0}, {0, 1}}},  // both on the wrong node
                      CellCase{"4node", {{2, 0}, {3, 0}, {0, 0}, {1, 1}}},
                      CellCase{"2node", {{1, 0}}}));  // no cells: one for the domain

// A cell wider than a node (its vCPUs on two): its memory is already on
// one of the nodes its vCPUs run on, so nothing moves back and forth.
TEST(WideCellTest, ACellOverTwoNodesKeepsItsMemoryWhereItServesTheCell) {
  absl::StatusOr<Topology> topology =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-2node.toml");
  ASSERT_TRUE(topology.ok()) << topology.status();
  constexpr uint64_t kPages = 16384;
  ModelPlacementView view(*topology, kPages, {0, 0, 1, 1}, nullptr);
  view.TouchRange({0, kPages}, 0);
  BalancerConfig config;
  config.cells = {{0, 1, 2, 3}};
  config.place_vcpus = false;
  config.warmup = absl::ZeroDuration();
  VmBalancer balancer(BalanceMode::kOn, *topology, 4, kPages, view, config);
  CellSamples samples({{0, kPages, {0, 1, 2, 3}}});
  for (int round = 0; round < 16; ++round) {
    ASSERT_TRUE(
        balancer.OnBatch(samples.Next(16, absl::Seconds(round)), absl::Seconds(round)).ok());
  }
  EXPECT_EQ(view.bounces(), 0u);
  EXPECT_EQ(view.remigrations(), 0u);
  EXPECT_EQ(view.page_moves(), 0u) << "node 0 serves the cell as well as node 1";
}

}  // namespace
}  // namespace numavm
