// `numavm simulate`: the closed loop on the shipped topology files, small
// and large, for every workload shape, at a fixed seed - deterministic, so
// the bounds are today's results with margin, not the machine's load.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "balancer/simulate/simulation.h"
#include "tests/unit/simulate_helpers.h"

namespace numavm {
namespace {

using simtest::Defaults;
using simtest::FastScan;
using simtest::LoadShipped;
using simtest::RunSim;

struct Case {
  std::string topology;
  int vcpus;
};

class Shapes : public ::testing::TestWithParam<Case> {
 protected:
  Topology topology_ = LoadShipped(GetParam().topology);
};

const char* const kOwnedShapes[] = {"numa01", "numa01_read", "numa01_thread_alloc",
                                    "numa02", "numa02_read", "numa02_smt",
                                    "groups", "hot"};

// Shapes whose memory has owners: the balancer reaches 90% of best (or
// beats it by moving vCPUs) with about the fewest moves, none repeated.
TEST_P(Shapes, OwnedMemoryReachesBestWithTheFewestMoves) {
  for (const char* shape : kOwnedShapes) {
    SCOPED_TRACE(shape);
    const SimulationResult r = RunSim(Defaults(shape, GetParam().vcpus), topology_);
    ASSERT_TRUE(r.has_accesses);
    EXPECT_GE(r.final_locality, 0.9 * r.best_locality);
    // Moving vCPUs within the nodes' CPUs never makes the bar lower.
    EXPECT_GE(r.best_moving_vcpus_locality, r.best_locality - 1e-12);
    EXPECT_LE(r.best_moving_vcpus_locality, 1.0 + 1e-12);
    ASSERT_TRUE(r.seconds_to_90pct_of_best.has_value());
    // The warm-up (4 s), then two visits of each region: today 5-7 s.
    EXPECT_LE(*r.seconds_to_90pct_of_best, 10.0);
    EXPECT_LE(r.pages_migrated, r.min_page_moves * 12 / 10 + 16);
    EXPECT_LE(r.remigrations, r.pages_migrated / 50);
  }
}

// Memory every vCPU uses is left where it is: nothing bounces.
TEST_P(Shapes, SharedMemoryIsNotBounced) {
  const SimulationResult r = RunSim(Defaults("shared", GetParam().vcpus), topology_);
  EXPECT_LE(r.pages_migrated, 16384u / 100) << "of 16384 pages";
  EXPECT_EQ(r.remigrations, 0u);
  EXPECT_GE(r.final_locality, r.start_locality);
}

// Owners change, once or every 15 s: followed each time within 10 s (today
// 3-5 s: the changed regions' visits disagree, then agree on the new node).
TEST_P(Shapes, ChangesOfOwnerAreFollowed) {
  for (const char* shape : {"phase", "handover", "handover:every=15s"}) {
    SCOPED_TRACE(shape);
    const SimulationResult r = RunSim(Defaults(shape, GetParam().vcpus, 90), topology_);
    ASSERT_GE(r.phases.size(), 2u);
    EXPECT_GE(r.final_locality, 0.9 * r.best_locality);
    for (const SimPhaseResult& p : r.phases) {
      SCOPED_TRACE(p.label);
      ASSERT_TRUE(p.seconds_to_90pct_of_best.has_value());
      EXPECT_LE(*p.seconds_to_90pct_of_best, 10.0);
    }
    EXPECT_LE(r.remigrations, r.pages_migrated / 50);
  }
}

// Ownership that drifts a tenth of a slice every 10 s: most of it is
// followed, with about the moves best needs phase after phase.
// (Re-migrations within 10 s are no measure here: the owners change every
// 10 s, and a page that moved off the first-touch node may belong to a
// vCPU there after the next step.)
TEST_P(Shapes, DriftingOwnershipIsFollowed) {
  const SimulationResult r =
      RunSim(Defaults("drift:every=10s,step=0.1", GetParam().vcpus, 90), topology_);
  EXPECT_GE(r.final_locality, 0.8 * r.best_locality);
  EXPECT_LE(r.pages_migrated, r.min_page_moves * 12 / 10 + 16);
}

TEST_P(Shapes, AnIdleGuestIsLeftAlone) {
  const SimulationResult r = RunSim(Defaults("idle", GetParam().vcpus), topology_);
  EXPECT_FALSE(r.has_accesses);
  EXPECT_EQ(r.pages_migrated, 0u);
  EXPECT_EQ(r.sampler.samples, 0u);
  EXPECT_LE(r.sampler.windows, 1u) << "only the first window, before the VM was seen idle";
}

// The fixed-window scanner still works where it is asked for.
TEST_P(Shapes, TheFixedWindowScannerConverges) {
  for (const char* shape : {"numa01", "numa02", "hot"}) {
    SCOPED_TRACE(shape);
    const SimulationResult r = RunSim(FastScan(shape, GetParam().vcpus), topology_);
    EXPECT_GE(r.final_locality, 0.9 * r.best_locality);
    EXPECT_LE(r.pages_migrated, r.min_page_moves * 12 / 10 + 16);
    EXPECT_LE(r.remigrations, r.pages_migrated / 50);
  }
}

INSTANTIATE_TEST_SUITE_P(Topologies, Shapes,
                         ::testing::Values(Case{"topology-2node", 8}, Case{"topology-4node", 8},
                                           Case{"topology-8node", 8},
                                           Case{"topology-4node-1cpu", 4},
                                           Case{"topology-2node-large", 16},
                                           Case{"topology-4node-large", 16},
                                           Case{"topology-8node-large", 16}),
                         [](const auto& info) {
                           std::string name = info.param.topology.substr(9);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return absl::StrCat(name, "_", info.param.vcpus, "vcpus");
                         });

// Groups of many vCPUs form (a pair in a group of 32 sees 1/31 of a
// member's hand-overs) and join their memory.
TEST(Simulate, BigGroupsFormAndJoinTheirMemory) {
  const Topology t = LoadShipped("topology-8node-large");
  const SimulationResult r = RunSim(Defaults("numa01", 32), t);
  EXPECT_EQ(r.counters.groups, 2);
  EXPECT_GE(r.final_locality, 0.9 * r.best_locality);
}

// numa01's two groups of eight, started four a node on 4 nodes of 16 CPUs
// (each group over two nodes): with the vCPUs where they started, half of a
// group's accesses are local at best; with the vCPUs moved, each group fits
// a node and all of them are. The balancer gathers the groups and gets
// there.
TEST(Simulate, TheBestWithVcpusMovedGathersTheGroups) {
  const Topology t = LoadShipped("topology-4node-large");
  SimulationOptions o = Defaults("numa01", 16, 128);
  o.memory_bytes = 1ull << 30;
  const SimulationResult r = RunSim(o, t);
  EXPECT_DOUBLE_EQ(r.best_locality, 0.5);
  EXPECT_DOUBLE_EQ(r.best_moving_vcpus_locality, 1.0);
  ASSERT_EQ(r.best_vcpu_nodes.size(), 16u);
  for (int v = 0; v < 16; ++v) {
    EXPECT_EQ(r.best_vcpu_nodes[v], r.best_vcpu_nodes[v < 8 ? 0 : 8]) << "vCPU " << v;
  }
  EXPECT_NE(r.best_vcpu_nodes[0], r.best_vcpu_nodes[8]);
  EXPECT_GE(r.final_locality, 0.9 * r.best_moving_vcpus_locality);
  EXPECT_TRUE(r.seconds_to_90pct_of_best_moving_vcpus.has_value());
}

TEST(Simulate, TheSameSeedGivesTheSameRun) {
  const Topology t = LoadShipped("topology-4node");
  // Slow vCPUs: an armed page is touched within a period only sometimes.
  SimulationOptions o = Defaults("hot:rate=16M", 8);
  const SimulationResult a = RunSim(o, t);
  const SimulationResult b = RunSim(o, t);
  ASSERT_EQ(a.series.size(), b.series.size());
  for (size_t i = 0; i < a.series.size(); ++i) {
    EXPECT_EQ(a.series[i].locality, b.series[i].locality) << i;
  }
  EXPECT_EQ(a.pages_migrated, b.pages_migrated);
  EXPECT_EQ(a.sampler.samples, b.sampler.samples);
  EXPECT_EQ(a.stall_seconds, b.stall_seconds);
  o.seed = 2;
  const SimulationResult c = RunSim(o, t);
  EXPECT_NE(c.sampler.samples, a.sampler.samples) << "the seed drives the sampler model";
}

TEST(Simulate, DirtyLogSamplesHaveNoVcpuSoNothingMoves) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions o = Defaults("numa02", 4);
  o.sampler = SamplerKind::kDirtyLog;
  const SimulationResult r = RunSim(o, t);
  EXPECT_GT(r.sampler.samples, 0u);
  EXPECT_EQ(r.sampler.unattributed, r.sampler.samples);
  EXPECT_EQ(r.pages_migrated, 0u);
}

TEST(Simulate, TheDirtyRingSeesWritesNotReads) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions o = Defaults("numa02", 4);
  o.sampler = SamplerKind::kRing;
  const SimulationResult writes = RunSim(o, t);
  EXPECT_GE(writes.final_locality, 0.9 * writes.best_locality);
  EXPECT_EQ(writes.sampler.unattributed, 0u);
  o.workload = *ParseWorkloadSpec("numa02_read");
  const SimulationResult reads = RunSim(o, t);
  EXPECT_EQ(reads.sampler.samples, 0u);
  EXPECT_EQ(reads.pages_migrated, 0u);
}

TEST(Simulate, BalanceOffMovesNothing) {
  const Topology t = LoadShipped("topology-4node");
  SimulationOptions o = Defaults("numa02", 8);
  o.mode = BalanceMode::kOff;
  const SimulationResult r = RunSim(o, t);
  EXPECT_EQ(r.pages_migrated, 0u);
  EXPECT_EQ(r.vcpu_moves, 0u);
  EXPECT_DOUBLE_EQ(r.final_locality, r.start_locality);
  EXPECT_DOUBLE_EQ(r.start_locality, 0.25) << "first touch puts it all on node 0";
}

TEST(Simulate, SpreadFirstTouchStartsAtBest) {
  const Topology t = LoadShipped("topology-4node");
  SimulationOptions o = Defaults("numa02", 8);
  o.first_touch = SimFirstTouch::kSpread;
  const SimulationResult r = RunSim(o, t);
  EXPECT_DOUBLE_EQ(r.start_locality, 1.0);
  EXPECT_EQ(r.min_page_moves, 0u);
  EXPECT_EQ(r.pages_migrated, 0u);
}

TEST(Simulate, FirstTouchSpillsToTheNearestNode) {
  // 8 GiB nodes; a 12 GiB guest first touched from node 0 spills 4 GiB to
  // node 1, its near neighbour (16), not to 2 or 3 (22).
  const Topology t = LoadShipped("topology-4node");
  SimulationOptions o = Defaults("numa02", 4, 1);
  o.memory_bytes = 12ull << 30;
  o.mode = BalanceMode::kOff;
  o.sampler = SamplerKind::kOff;
  const SimulationResult r = RunSim(o, t);
  EXPECT_EQ(r.pages_per_node[0], (8ull << 30) / 4096);
  EXPECT_EQ(r.pages_per_node[1], (4ull << 30) / 4096);
  EXPECT_EQ(r.pages_per_node[2] + r.pages_per_node[3], 0u);
}

TEST(Simulate, BestMovesNothingThatIsAlreadyOnABusiestNode) {
  // Memory every vCPU uses alike, spilled over two nodes at first touch:
  // any node is as good as another, so best moves nothing.
  const Topology t = LoadShipped("topology-4node");
  SimulationOptions o = Defaults("shared", 8, 1);
  o.memory_bytes = 12ull << 30;
  o.mode = BalanceMode::kOff;
  o.sampler = SamplerKind::kOff;
  const SimulationResult r = RunSim(o, t);
  EXPECT_EQ(r.min_page_moves, 0u);
  EXPECT_DOUBLE_EQ(r.best_locality, 0.25);
}

}  // namespace
}  // namespace numavm
