// `numavm simulate`: the closed loop on the shipped topology files, small
// and large, for every workload shape, at a fixed seed - deterministic, so
// the bounds are today's results with margin, not the machine's load.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "balancer/simulate/simulation.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

Topology LoadShipped(const std::string& name) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + name + ".toml");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// A 64 MiB guest at the default scan (regions at the rate the stall budget
// allows).
SimulationOptions Defaults(const std::string& workload, int vcpus, int seconds = 60) {
  SimulationOptions o;
  o.workload = *ParseWorkloadSpec(workload);
  o.vcpus = vcpus;
  o.memory_bytes = 64ull << 20;
  o.seconds = absl::Seconds(seconds);
  o.scan.adaptive = true;
  return o;
}

// The fixed-window scanner (--scan-window): the whole 64 MiB every 500 ms.
SimulationOptions FastScan(const std::string& workload, int vcpus, int seconds = 60) {
  SimulationOptions o = Defaults(workload, vcpus, seconds);
  o.scan = {o.memory_bytes, absl::Milliseconds(500), absl::Seconds(8), true};
  return o;
}

// Other work on every node, leaving one CPU free: no node holds a VM of two
// vCPUs or more, so its vCPUs stay spread and their memory must move
// (policy/vcpu_plan.h). For the tests of what moving memory costs; on an
// idle host a VM that fits a node gathers where its memory is.
std::vector<double> BusyHost(const Topology& t) {
  std::vector<double> busy;
  for (const NumaNode& n : t.nodes) busy.push_back(n.cpus.empty() ? 0.0 : n.cpus.size() - 1.0);
  return busy;
}

SimulationResult RunSim(const SimulationOptions& o, const Topology& t) {
  absl::StatusOr<SimulationResult> r = Simulate(o, t);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimulationResult{};
}

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

// Each fault costs its vCPU the round trip, each zap the host its arm
// cost; together within the stall budget.
TEST(Simulate, HintFaultsAndZapsAreChargedWithinTheBudget) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions o = Defaults("numa02", 4, 10);
  o.costs.hint_fault = absl::Microseconds(100);
  o.costs.arm_page = absl::Microseconds(3);
  const SimulationResult r = RunSim(o, t);
  ASSERT_GT(r.sampler.samples, 0u);
  EXPECT_NEAR(r.stall_seconds, r.sampler.samples * 100e-6 + r.sampler.pages_armed * 3e-6, 1e-6);
  EXPECT_NEAR(r.stall_share, r.stall_seconds / (4 * 10.0), 1e-9);
  // Within the stall budget (1% by default).
  EXPECT_LE(r.stall_share, 0.01);
}

// The NUMA lab's figures (docs/numa-lab.md: 2-3 ms of host time to arm a
// probe under nested TCG, a 157 us fault) against the development
// machine's: the budget holds either way - a dear probe slows the scan,
// never the guest past its share.
TEST(Simulate, AnExpensiveArmSlowsTheScanNotTheGuest) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions cheap = Defaults("numa02", 4, 60);
  cheap.memory_bytes = 1ull << 30;
  cheap.other_busy = BusyHost(t);
  SimulationOptions dear = cheap;
  dear.costs.hint_fault = absl::Microseconds(157);
  dear.costs.arm_page = absl::Milliseconds(3);
  const SimulationResult a = RunSim(cheap, t);
  const SimulationResult b = RunSim(dear, t);
  EXPECT_LE(a.stall_share, 0.01);
  EXPECT_LE(b.stall_share, 0.01);
  // The dear scan arms fewer probes and converges later (43 s against 6 s
  // since two regions share a call; 93 s before).
  EXPECT_LT(b.sampler.pages_armed, a.sampler.pages_armed);
  ASSERT_TRUE(a.seconds_to_90pct_of_best.has_value());
  EXPECT_TRUE(!b.seconds_to_90pct_of_best.has_value() ||
              *b.seconds_to_90pct_of_best > *a.seconds_to_90pct_of_best);
  // It arms them in runs of neighbouring pages, one call a run: more pages
  // than 1% of 4 busy vCPUs for 60 s (2.4 s) buys one 3 ms call at a time.
  EXPECT_GT(b.sampler.pages_armed * 3e-3, 0.01 * 4 * 60);
  // Within the budget from its first seconds (the scan stays at its floor
  // until the host's cost is measured), and within two minutes it converges
  // with the fewest moves.
  dear.seconds = absl::Seconds(10);
  EXPECT_LE(RunSim(dear, t).stall_share, 0.01);
  dear.seconds = absl::Seconds(120);
  const SimulationResult c = RunSim(dear, t);
  EXPECT_LE(c.stall_share, 0.01);
  ASSERT_TRUE(c.seconds_to_90pct_of_best.has_value());
  EXPECT_EQ(c.pages_migrated, c.min_page_moves);
}

// A page move that costs the balancer's thread wall time (the NUMA lab's
// ~1.4 ms through the alias process, ~8 ms mapped) is bounded as `run`
// bounds it: a period's moves stop after PageMigrator::kMaxTimePerPeriod
// (a batch under way ends), and the next period begins when they are done.
TEST(Simulate, ADearPageMoveHoldsTheLoopAndIsBoundedPerPeriod) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions free = Defaults("numa02", 4, 60);
  free.memory_bytes = 1ull << 30;
  free.other_busy = BusyHost(t);
  free.migrate_threads = 1;  // one thread's bound (threads: the test below)
  SimulationOptions dear = free;
  dear.costs.move_page = absl::Microseconds(1400);
  const SimulationResult a = RunSim(free, t);
  const SimulationResult b = RunSim(dear, t);
  // Free moves take numa02 to the fewest moves in the minute; dear ones
  // move at most the 512-page batches that start within the bound (717 ms
  // of moving each), and the periods themselves grow by that.
  EXPECT_EQ(a.pages_migrated, a.min_page_moves);
  const double batch_seconds = PageMigrator::kBatchPages * 1400e-6;
  const uint64_t batches = static_cast<uint64_t>(
      std::ceil(absl::ToDoubleSeconds(PageMigrator::kMaxTimePerPeriod) / batch_seconds));
  EXPECT_LE(b.pages_migrated, b.periods * batches * PageMigrator::kBatchPages);
  EXPECT_GT(b.pages_migrated, 0u);
  EXPECT_LT(b.periods, a.periods);
  EXPECT_LT(b.final_locality, a.final_locality);
  // Dearer still (8 ms: 4 s a batch): fewer.
  SimulationOptions dearer = free;
  dearer.costs.move_page = absl::Milliseconds(8);
  EXPECT_LT(RunSim(dearer, t).pages_migrated, b.pages_migrated);
}

// Where one thread is short of time for a period's moves, up to
// --migrate-threads threads share them (PageMigrator::WorkersFor): at the
// lab's costs (1.4 ms a page, 157 us faults, 3 ms arming calls) four move
// at least three times what one moves (or all of it), never more than the
// batches four can start within each period's bound, and the guest ends
// more local.
TEST(Simulate, ThreadsShareADearPeriodsMovesAndMoveMore) {
  const Topology t = LoadShipped("topology-2node");
  SimulationOptions one = Defaults("numa02", 4, 120);
  one.memory_bytes = 1ull << 30;
  one.other_busy = BusyHost(t);
  one.costs.hint_fault = absl::Microseconds(157);
  one.costs.arm_page = absl::Milliseconds(3);
  one.costs.move_page = absl::Microseconds(1400);
  one.migrate_threads = 1;
  SimulationOptions four = one;
  four.migrate_threads = 4;
  const SimulationResult a = RunSim(one, t);
  const SimulationResult b = RunSim(four, t);
  const double batch_seconds = PageMigrator::kBatchPages * 1400e-6;
  const uint64_t batches = static_cast<uint64_t>(
      std::ceil(absl::ToDoubleSeconds(PageMigrator::kMaxTimePerPeriod) / batch_seconds));
  EXPECT_LE(b.pages_migrated, b.periods * batches * 4 * PageMigrator::kBatchPages);
  // (or all there is to move, which four threads reach in the two minutes)
  EXPECT_GE(b.pages_migrated, std::min(3 * a.pages_migrated, b.min_page_moves));
  EXPECT_LE(b.pages_migrated, b.min_page_moves);  // none moved twice
  EXPECT_EQ(b.remigrations, 0u);
  EXPECT_GT(b.final_locality, a.final_locality + 0.2);
  // Where moves are cheap, one thread does it all and nothing changes.
  SimulationOptions cheap_one = Defaults("numa02", 4, 60);
  cheap_one.migrate_threads = 1;
  SimulationOptions cheap_four = cheap_one;
  cheap_four.migrate_threads = 4;
  const SimulationResult c = RunSim(cheap_one, t);
  const SimulationResult d = RunSim(cheap_four, t);
  EXPECT_EQ(c.pages_migrated, d.pages_migrated);
  EXPECT_EQ(c.final_locality, d.final_locality);
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
