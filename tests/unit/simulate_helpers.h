// Shared by the simulator's tests: the shipped topologies, a 64 MiB guest at
// the default scan, a host whose nodes are busy with other work, one run.
#ifndef NUMAVM_TESTS_UNIT_SIMULATE_HELPERS_H_
#define NUMAVM_TESTS_UNIT_SIMULATE_HELPERS_H_

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "balancer/simulate/simulation.h"
#include "balancer/topology/topology_file.h"

namespace numavm::simtest {

inline Topology LoadShipped(const std::string& name) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + name + ".toml");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// A 64 MiB guest at the default scan (regions at the rate the stall budget
// allows).
inline SimulationOptions Defaults(const std::string& workload, int vcpus, int seconds = 60) {
  SimulationOptions o;
  o.workload = *ParseWorkloadSpec(workload);
  o.vcpus = vcpus;
  o.memory_bytes = 64ull << 20;
  o.seconds = absl::Seconds(seconds);
  o.scan.adaptive = true;
  return o;
}

// The fixed-window scanner (--scan-window): the whole 64 MiB every 500 ms.
inline SimulationOptions FastScan(const std::string& workload, int vcpus, int seconds = 60) {
  SimulationOptions o = Defaults(workload, vcpus, seconds);
  o.scan = {o.memory_bytes, absl::Milliseconds(500), absl::Seconds(8), true};
  return o;
}

// Other work on every node, leaving one CPU free: no node holds a VM of two
// vCPUs or more, so its vCPUs stay spread and their memory must move
// (policy/vcpu_plan.h). For the tests of what moving memory costs; on an
// idle host a VM that fits a node gathers where its memory is.
inline std::vector<double> BusyHost(const Topology& t) {
  std::vector<double> busy;
  for (const NumaNode& n : t.nodes) busy.push_back(n.cpus.empty() ? 0.0 : n.cpus.size() - 1.0);
  return busy;
}

inline SimulationResult RunSim(const SimulationOptions& o, const Topology& t) {
  absl::StatusOr<SimulationResult> r = Simulate(o, t);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : SimulationResult{};
}

}  // namespace numavm::simtest

#endif  // NUMAVM_TESTS_UNIT_SIMULATE_HELPERS_H_
