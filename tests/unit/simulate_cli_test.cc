// `numavm simulate` from the command line: bad input is one line and exit
// 2; the JSON report is the same every run at a fixed seed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::CountLines;
using testing::ProcessResult;
using testing::RunNumavm;

void ExpectBadInput(const ProcessResult& r, const std::string& needle) {
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(CountLines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST(SimulateCli, BadInputIsOneLineAndExitTwo) {
  const std::string topo = std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-2node.toml";
  // A flag, its bad value, and what the one line must say.
  const struct {
    const char* flag;
    const char* value;
    const char* says;
  } cases[] = {
      {"--workload", "numa03", "unknown workload 'numa03'"},
      {"--workload", "numa02:colour=red", "unknown parameter 'colour'"},
      {"--workload", "numa02:size=2G", "size=2 GiB must be 4 KiB to the guest's 1 GiB"},
      {"--memory", "2T", "want 16 MiB to 1 TiB"},
      {"--vcpus", "257", "want 1 to 256"},
      {"--memory", "64G", "cannot hold a 64 GiB guest"},
      {"--fault-cost", "slow", "--fault-cost 'slow'"},
      {"--arm-cost", "2s", "--arm-cost '2s'"},
      {"--move-cost", "-1ms", "--move-cost '-1ms'"},
      {"--first-touch", "later", "want boot or spread"},
      {"--confine-first", "soon", "--confine-first: 'soon' is not a duration"},
      {"--touch", "bytes", "--touch: 'bytes': want runs or pages"},
      {"--confined-work", "sleep",
       "--confined-work: 'sleep': want workload, first-touch or first-touch-in-order"},
      {"--busy-cpus", "lots", "--busy-cpus 'lots': want CPUs per node"},
      {"--busy-cpus", "-1", "--busy-cpus '-1': want CPUs per node"},
      {"--busy-cpus", "1,2,3", "--busy-cpus: 3 figures for 2 nodes"},
      {"--busy-cpus", "5", "node 0 has 4 CPUs, so 0 to 4 busy"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.flag) + " " + c.value);
    ExpectBadInput(RunNumavm({"simulate", "--topology", topo, c.flag, c.value}), c.says);
  }
}

// A VM that fits a node gathers there on an idle host; where other work
// leaves no node room for it (--busy-cpus), its vCPUs stay spread and the
// remote half of its memory moves.
TEST(SimulateCli, BusyCpusDecideWhetherTheVmGathers) {
  const std::string topo = std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-2node.toml";
  const std::vector<std::string> args = {"simulate", "--topology", topo,       "--vcpus", "4",
                                         "--memory", "64M",        "--report", "json"};
  const ProcessResult idle = RunNumavm(args);
  ASSERT_EQ(idle.exit_code, 0) << idle.err;
  std::vector<std::string> busy_args = args;
  busy_args.insert(busy_args.end(), {"--busy-cpus", "3"});
  const ProcessResult busy = RunNumavm(busy_args);
  ASSERT_EQ(busy.exit_code, 0) << busy.err;
  const nlohmann::json i = nlohmann::json::parse(idle.out);
  const nlohmann::json b = nlohmann::json::parse(busy.out);
  EXPECT_EQ(i["vcpu_end_nodes"], nlohmann::json({0, 0, 0, 0}));
  EXPECT_EQ(i["pages_migrated"], 0);
  EXPECT_GT(i["balance"]["decisions"]["vm-fits-node"].get<uint64_t>(), 0u);
  EXPECT_EQ(b["model"]["busy_cpus"], nlohmann::json({3.0, 3.0}));
  EXPECT_EQ(b["vcpu_end_nodes"], b["vcpu_start_nodes"]);
  EXPECT_EQ(b["pages_migrated"], b["min_page_moves"]);
  EXPECT_GT(b["pages_migrated"].get<uint64_t>(), 0u);
  EXPECT_FALSE(b["balance"]["decisions"].contains("vm-fits-node"));
  EXPECT_GE(i["final_locality"].get<double>(), 0.99);
  EXPECT_GE(b["final_locality"].get<double>(), 0.99);
}

TEST(SimulateCli, JsonIsTheSameEveryRun) {
  const std::vector<std::string> args = {
      "simulate",   "--topology", std::string(NUMAVM_SOURCE_DIR) + "/configs/topology-4node.toml",
      "--workload", "phase",      "--vcpus",
      "8",          "--memory",   "256M",
      "--duration", "40",         "--scan-window",
      "64M",        "--report",   "json"};
  // Everything but generated_at is the same every run; with
  // SOURCE_DATE_EPOCH (reproducible output) that is too.
  setenv("SOURCE_DATE_EPOCH", "1764547200", 1);
  const ProcessResult a = RunNumavm(args);
  const ProcessResult b = RunNumavm(args);
  unsetenv("SOURCE_DATE_EPOCH");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const nlohmann::json j = nlohmann::json::parse(a.out);
  EXPECT_EQ(j["generated_at"], "2025-12-01T00:00:00Z");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["command"], "simulate");
  const ProcessResult now = RunNumavm(args);
  nlohmann::json c = nlohmann::json::parse(now.out);
  EXPECT_NE(c["generated_at"], j["generated_at"]);
  c["generated_at"] = j["generated_at"];
  EXPECT_EQ(c, j);
  for (const char* key :
       {"\"best_locality\"", "\"final_locality\"", "\"seconds_to_90pct_of_best\"",
        "\"pages_migrated\"", "\"min_page_moves\"", "\"remigrations\"", "\"stall_seconds\"",
        "\"balancer_cpu_seconds\"", "\"locality_series\"", "\"best_definition\""}) {
    EXPECT_NE(a.out.find(key), std::string::npos) << key;
  }
}

}  // namespace
}  // namespace numavm
