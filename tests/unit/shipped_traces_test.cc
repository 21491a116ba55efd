// The balancer on access streams recorded once on the bundled VMM and shipped
// in tests/data (scripts/record-test-traces.sh): numa01 (4 vCPUs), numa02,
// numa02_read (2 vCPUs) and shared (4 vCPUs), 8 MiB working sets, every
// page sampled in every 500 ms period. Replayed on the shipped topology
// files and judged by ground truth against the best placement. The files
// never change between runs, so the bounds are tight: today's figures
// (docs/replay.md) with little margin.
#include <gtest/gtest.h>

#include <string>

#include "balancer/replay/replay.h"
#include "balancer/replay/trace.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

struct Replayed {
  ReplayResult on, off;
};

Replayed ReplayShipped(const std::string& trace_name, const std::string& topology_name,
                       bool busy_host = false) {
  absl::StatusOr<AccessTrace> trace =
      ReadTraceFile(std::string(NUMAVM_SOURCE_DIR) + "/tests/data/" + trace_name + ".trace");
  EXPECT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<Topology> topology =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + topology_name + ".toml");
  EXPECT_TRUE(topology.ok()) << topology.status();
  Replayed out;
  ReplayOptions on_options;
  if (busy_host) {
    // Other work on every node, leaving one CPU free: no node has room for
    // the whole VM, so its vCPUs stay spread (policy/vcpu_plan.h).
    for (const NumaNode& n : topology->nodes) {
      on_options.other_busy.push_back(n.cpus.empty() ? 0.0 : n.cpus.size() - 1.0);
    }
  }
  absl::StatusOr<ReplayResult> on = Replay(*trace, *topology, on_options);
  EXPECT_TRUE(on.ok()) << on.status();
  ReplayOptions off_options;
  off_options.mode = BalanceMode::kOff;
  absl::StatusOr<ReplayResult> off = Replay(*trace, *topology, off_options);
  EXPECT_TRUE(off.ok()) << off.status();
  if (on.ok()) out.on = *on;
  if (off.ok()) out.off = *off;
  return out;
}

class ShippedTraces : public ::testing::TestWithParam<std::string> {};

// Private memory (each vCPU its own slice, written or only read), all of
// it first touched on vCPU 0's node. On an idle host where a node holds the
// VM, its vCPUs gather there: nothing moves and every access ends local.
TEST_P(ShippedTraces, PrivateSlicesStayWhereTheVmGathers) {
  if (GetParam() == "topology-4node-1cpu") GTEST_SKIP() << "no node holds the VM";
  for (const char* trace : {"numa02", "numa02_read"}) {
    SCOPED_TRACE(trace);
    const Replayed r = ReplayShipped(trace, GetParam());
    EXPECT_EQ(r.on.vcpu_end, std::vector<int>(r.on.vcpu_end.size(), r.on.vcpu_start[0]));
    EXPECT_EQ(r.on.counters.pages_migrated, 0u);
    EXPECT_GE(r.on.final_locality, 0.99);
    ASSERT_TRUE(r.on.seconds_to_90pct_of_best.has_value());
    EXPECT_LE(*r.on.seconds_to_90pct_of_best, 5.0);  // 4 s of warm-up, then one period
    EXPECT_NEAR(r.off.final_locality, 0.5, 0.01) << "left alone, vCPU 1's memory stays remote";
  }
}

// The same where no node has room for the whole VM (other work on the
// host; one CPU a node): exactly the remote slices move, once, and every
// access ends local.
TEST_P(ShippedTraces, PrivateSlicesMoveOnceAndEndLocal) {
  for (const char* trace : {"numa02", "numa02_read"}) {
    SCOPED_TRACE(trace);
    const Replayed r = ReplayShipped(trace, GetParam(), /*busy_host=*/true);
    EXPECT_DOUBLE_EQ(r.on.best.locality, 1.0);
    EXPECT_GE(r.on.final_locality, 0.99);
    EXPECT_LE(r.on.counters.pages_migrated, r.on.best.min_page_moves * 102 / 100);
    EXPECT_GE(r.on.counters.pages_migrated, r.on.best.min_page_moves * 98 / 100);
    EXPECT_EQ(r.on.remigrations, 0u);
    ASSERT_TRUE(r.on.seconds_to_90pct_of_best.has_value());
    EXPECT_LE(*r.on.seconds_to_90pct_of_best, 5.0);  // 4 s of warm-up, then two samples
    EXPECT_NEAR(r.off.final_locality, 0.5, 0.01) << "left alone, vCPU 1's memory stays remote";
  }
}

// Two groups of two vCPUs, each sharing its own region. Where a group fits
// a node (every file but the 1-CPU one) the balancer brings the group
// together with its memory: at least best's locality (best keeps vCPUs
// where they started) with no more than best's moves.
TEST_P(ShippedTraces, GroupsShareANodeWithTheirMemory) {
  if (GetParam() == "topology-4node-1cpu") GTEST_SKIP() << "no node holds a group";
  const Replayed r = ReplayShipped("numa01", GetParam());
  EXPECT_GE(r.on.final_locality, 0.99);
  EXPECT_GE(r.on.final_locality, r.on.best.locality);
  EXPECT_LE(r.on.counters.pages_migrated, r.on.best.min_page_moves * 102 / 100);
  EXPECT_EQ(r.on.remigrations, 0u);
  EXPECT_EQ(r.on.counters.groups, 2);
}

// The lab's machine: four nodes of one CPU, so each group spans two nodes
// and its shared pages can be local to only one member. Known weakness
// (docs/replay.md): the balancer leaves a shared page on either of its
// group's nodes where best puts it with the member that samples it most;
// today 0.76x best (doing nothing: 0.46x). Held at 0.75x.
TEST(ShippedTracesKnownGap, Numa01OnOneCpuNodes) {
  const Replayed r = ReplayShipped("numa01", "topology-4node-1cpu");
  EXPECT_GE(r.on.final_locality, 0.75 * r.on.best.locality);
  EXPECT_GE(r.on.final_locality, r.off.final_locality + 0.2);
  EXPECT_EQ(r.on.remigrations, 0u);
}

// Every vCPU uses every page: nothing bounces; the group joins its memory
// where it fits.
TEST_P(ShippedTraces, SharedPagesAreNotBounced) {
  const Replayed r = ReplayShipped("shared", GetParam());
  EXPECT_LE(r.on.counters.pages_migrated, 2048u / 100) << "of 2048 pages";
  EXPECT_EQ(r.on.bounces, 0u);
  EXPECT_GE(r.on.final_locality, r.off.final_locality);
  EXPECT_EQ(r.on.counters.groups, 1);
}

INSTANTIATE_TEST_SUITE_P(Topologies, ShippedTraces,
                         ::testing::Values("topology-2node", "topology-4node",
                                           "topology-4node-1cpu", "topology-8node"),
                         [](const auto& info) {
                           std::string name = info.param.substr(9);
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace numavm
