// The balancing targets, in the simulator at numavm's defaults with the
// pessimistic fault cost of the development machine (55 us): 16 GiB guests
// with 16 vCPUs and 256 GiB guests with 64 vCPUs on the three large
// topology files reach 90% of best within two sweeps of the kernel's
// default scan (256 MB/s: 128 s and 2048 s), with at most 1.2x the fewest
// page moves and at most 2% re-migrations, and again within the same bound
// after their owners change. A 16 GiB guest fits one node of every file, so
// on an idle host its vCPUs gather with its memory (policy/vcpu_plan.h);
// each 16 GiB target also runs on a busy host (one CPU a node left free),
// where the vCPUs stay spread and the memory must move to them.
// Deterministic (seed 1): today's figures are in docs/simulate.md; these
// are the bounds, not the figures.
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "balancer/simulate/simulation.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

struct Target {
  std::string workload;
  int vcpus;
  uint64_t gib;
  int bound_seconds;       // to 90% of best, and again after each change
  int seconds;             // simulated
  bool busy_host = false;  // other work leaves one CPU a node free
};

class Acceptance : public ::testing::TestWithParam<std::tuple<std::string, Target>> {};

TEST_P(Acceptance, ReachesBestWithinTwoKernelSweeps) {
  const auto& [topology_name, t] = GetParam();
  absl::StatusOr<Topology> topology = LoadTopologyFile(
      std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-" + topology_name + ".toml");
  ASSERT_TRUE(topology.ok()) << topology.status();
  SimulationOptions o;
  o.workload = *ParseWorkloadSpec(t.workload);
  o.vcpus = t.vcpus;
  o.memory_bytes = t.gib << 30;
  o.seconds = absl::Seconds(t.seconds);
  o.scan.adaptive = true;
  if (t.busy_host) {
    for (const NumaNode& n : topology->nodes) {
      o.other_busy.push_back(n.cpus.empty() ? 0.0 : n.cpus.size() - 1.0);
    }
  }
  absl::StatusOr<SimulationResult> r = Simulate(o, *topology);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->seconds_to_90pct_of_best.has_value()) << "never reached 90% of best";
  EXPECT_LE(*r->seconds_to_90pct_of_best, t.bound_seconds);
  for (size_t p = 1; p < r->phases.size(); ++p) {
    SCOPED_TRACE(r->phases[p].label);
    ASSERT_TRUE(r->phases[p].seconds_to_90pct_of_best.has_value());
    EXPECT_LE(*r->phases[p].seconds_to_90pct_of_best, t.bound_seconds);
  }
  EXPECT_GE(r->final_locality, 0.9 * r->best_locality);
  EXPECT_LE(r->pages_migrated, r->min_page_moves * 12 / 10);
  EXPECT_LE(r->remigrations, r->pages_migrated / 50);
  EXPECT_LE(r->stall_share, 0.01) << "the stall budget";
}

std::vector<Target> Targets() {
  std::vector<Target> out;
  for (const char* w :
       {"numa01", "numa02", "numa02_read", "numa01_thread_alloc", "groups", "hot"}) {
    out.push_back({w, 16, 16, 128, 128});
    out.push_back({w, 16, 16, 128, 128, true});
    if (std::string(w) != "numa01_thread_alloc" && std::string(w) != "hot") {
      out.push_back({w, 64, 256, 2048, 2048});
    }
  }
  // One change of every owner, after the first convergence.
  out.push_back({"handover:every=128s", 16, 16, 128, 256});
  out.push_back({"handover:every=128s", 16, 16, 128, 256, true});
  out.push_back({"handover:every=2048s", 64, 256, 2048, 4096});
  return out;
}

INSTANTIATE_TEST_SUITE_P(LargeTopologies, Acceptance,
                         ::testing::Combine(::testing::Values("2node-large", "4node-large",
                                                              "8node-large"),
                                            ::testing::ValuesIn(Targets())),
                         [](const auto& info) {
                           const Target& t = std::get<1>(info.param);
                           std::string w = t.workload.substr(0, t.workload.find(':'));
                           std::string name = absl::StrCat(std::get<0>(info.param), "_", w, "_",
                                                           t.gib, "G", t.busy_host ? "_busy" : "");
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

}  // namespace
}  // namespace numavm
