// How soon memory that a vCPU group shares settles, where each group spans
// nodes: numa01 (two pairs of vCPUs, each pair writing its own half) on the
// NUMA lab's four one-CPU nodes, at the lab's measured costs (an arming
// call 1.4 ms of host time, a hinting fault 125 us, a page move 110 us:
// docs/numa-lab.md). A pair cannot share a one-CPU node, so at best half
// of the accesses are local: each half on one of its pair's nodes. The
// scan there covers the guest in about 20 s; a pair is known only from
// pages seen changing vCPU twice (the first change may be first touch),
// so grouping used to wait for a page's third sample - three sweeps - and
// its regions, having disagreed meanwhile, for runs of agreement after it.
// Deterministic (a fixed seed).
#include <gtest/gtest.h>

#include <string>

#include "balancer/simulate/simulation.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

TEST(GroupSpeed, PairsOverOneCpuNodesGetTheirMemoryWithinThreeSweeps) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-4node-1cpu.toml");
  ASSERT_TRUE(t.ok()) << t.status();
  SimulationOptions o;
  o.workload = *ParseWorkloadSpec("numa01");
  o.vcpus = 4;
  o.memory_bytes = 512ull << 20;
  o.seconds = absl::Seconds(150);
  o.scan.adaptive = true;
  o.costs.arm_page = absl::Microseconds(1400);
  o.costs.hint_fault = absl::Microseconds(125);
  o.costs.move_page = absl::Microseconds(110);
  absl::StatusOr<SimulationResult> r = Simulate(o, *t);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->best_locality, 0.5);
  EXPECT_EQ(r->counters.groups, 2);
  // 49 s today; 94 s before pages that changed vCPU were sampled again
  // at once and a new group forgave its regions their disagreement.
  ASSERT_TRUE(r->seconds_to_90pct_of_best.has_value());
  EXPECT_LE(*r->seconds_to_90pct_of_best, 70.0);
  EXPECT_GE(r->final_locality, 0.95 * r->best_locality);
  // Each half moved about once, none back and forth.
  EXPECT_LE(r->counters.pages_migrated, r->min_page_moves * 6 / 5);
  EXPECT_LE(r->counters.remigrations, r->counters.pages_migrated / 50);
}

}  // namespace
}  // namespace numavm
