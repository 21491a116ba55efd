// The lab's console parser and table: what scripts/lab.sh prints comes from
// here, so a verify run's mismatches must be read from where numavm puts
// them and runs that differ only in vCPUs must both be shown.
#include "tests/lab/lab_results.h"

#include <gtest/gtest.h>

namespace numavm::lab {
namespace {

std::string VerifyJson(int vcpus, uint64_t mismatches) {
  nlohmann::json j;
  j["exit_code"] = 0;
  j["elapsed_seconds"] = 120.2;
  j["balance"] = {{"window_access_locality", nullptr}};
  j["results"] = {{"generations", {{"sum", 5}}}, {"mismatches", {{"sum", mismatches}}}};
  for (int v = 0; v < vcpus; ++v) j["vcpu"].push_back({{"index", v}, {"bytes", 100}});
  return j.dump();
}

TEST(LabResultsTest, VerifyMismatchesAndVcpuCountsAreReadPerRun) {
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-BEGIN verify churn\n"
      "LAB-JSON verify churn " +
      VerifyJson(1, 0) +
      "\n"
      "LAB-VMSTAT verify churn rc=0 numa_pages_migrated=0 pgmigrate_success=220000\n"
      "LAB-BEGIN verify churn\n"
      "LAB-JSON verify churn " +
      VerifyJson(2, 3) +
      "\n"
      "LAB-VMSTAT verify churn rc=0 numa_pages_migrated=0 pgmigrate_success=25323\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].vcpus, 1);
  EXPECT_EQ(runs[0].mismatches, 0u);
  EXPECT_EQ(runs[0].pages_migrated, 220000u);
  EXPECT_EQ(runs[1].vcpus, 2);
  EXPECT_EQ(runs[1].mismatches, 3u);
  EXPECT_EQ(runs[1].pages_migrated, 25323u);

  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("mismatches 0, 1 vCPUs, 120 s"), std::string::npos) << table;
  EXPECT_NE(table.find("mismatches 3, 2 vCPUs, 120 s"), std::string::npos) << table;
}

TEST(LabResultsTest, AVerifyRunWithoutAResultSaysSo) {
  nlohmann::json j = nlohmann::json::parse(VerifyJson(2, 0));
  j["exit_code"] = 3;
  j.erase("results");
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\nLAB-JSON verify churn " + j.dump() + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].mismatches.has_value());
  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("exit 3 mismatches not reported"), std::string::npos) << table;
}

TEST(LabResultsTest, ARerunOfTheSameCaseReplacesTheEarlierOne) {
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-JSON verify churn " +
      VerifyJson(2, 7) +
      "\n"
      "LAB-JSON verify churn " +
      VerifyJson(2, 0) + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].mismatches, 0u);
}

}  // namespace
}  // namespace numavm::lab

namespace numavm::lab {
namespace {

// A report with a placement series of (seconds, locality) points; the guest
// has processed `seconds` GiB by each.
nlohmann::json SeriesReport(const std::vector<std::pair<double, double>>& series) {
  nlohmann::json j;
  j["exit_code"] = 0;
  for (auto [t, v] : series) {
    j["placement_series"].push_back(
        {{"seconds", t}, {"placement_locality", v}, {"guest_bytes", uint64_t(t) << 30}});
  }
  return j;
}

// The fair lab's rows: every peer's own counters, time and guest work until
// its placement reached 90% of HARD's, and runs the lab broke.
TEST(LabResultsTest, PeersShowTheirCountersAndTheirConvergence) {
  auto report = [](const std::vector<std::pair<double, double>>& series) {
    nlohmann::json j = SeriesReport(series);
    j["placement_locality"] = series.back().second;
    j["balance"] = {{"window_access_locality", nullptr}, {"pages_migrated", 0}};
    j["vcpu"].push_back({{"index", 0}, {"bytes", 100}});
    return j.dump();
  };
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-JSON numa02 hard " +
      report({{5, 1.0}, {10, 1.0}}) +
      "\n"
      "LAB-VMSTAT numa02 hard rc=0 numa_pte_updates=0 pgmigrate_success=0\n"
      "LAB-JSON numa02 kernel " +
      report({{5, 0.5}, {10, 0.8}, {15, 0.95}}) +
      "\n"
      "LAB-VMSTAT numa02 kernel rc=0 numa_pte_updates=4011 numa_hint_faults=200 "
      "numa_hint_faults_local=150 numa_pages_migrated=512 pgmigrate_success=520\n"
      "LAB-KFAULTS numa02 kernel 2940 3180\n"
      "LAB-FAIL numa02 numad Kernel panic - not syncing\n"
      "LAB-FAIL numa02 numad the lab stopped\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 3u);
  const LabRun& kernel = runs[1];
  EXPECT_EQ(kernel.counters.at("numa_pte_updates"), 4011u);
  EXPECT_EQ(kernel.kernel_numa_migrated, 512u);
  // The kernel's access locality: its own recent faults, by the thread's node.
  ASSERT_TRUE(kernel.access.has_value());
  EXPECT_DOUBLE_EQ(*kernel.access, 2940.0 / 3180);
  EXPECT_FALSE(runs[0].access.has_value()) << "HARD: no sampler, no kernel faults";
  std::optional<Reached> at = PlacementReached(kernel, 0.9);
  ASSERT_TRUE(at.has_value());
  EXPECT_DOUBLE_EQ(at->seconds, 15);
  EXPECT_EQ(at->guest_bytes, 15ull << 30);
  EXPECT_EQ(runs[2].mode, "numad");
  EXPECT_EQ(runs[2].lab_failures, 2);
  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("4011"), std::string::npos) << table;
  EXPECT_NE(table.find("200 (75%)"), std::string::npos) << table;
  EXPECT_NE(table.find("92.5%"), std::string::npos) << table;
  EXPECT_NE(table.find("access: the kernel's recent NUMA faults, 2940 of 3180 local"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("15.00"), std::string::npos) << table;  // GiB to 90% of HARD
  EXPECT_NE(table.find("no result: the lab failed every time"), std::string::npos) << table;
}

// An integrity run the lab broke every time (a 1080 s 4-vCPU churn did) is
// a row that says so, not a crash of the table.
TEST(LabResultsTest, AVerifyRunThatFailedEveryTimeIsARow) {
  const std::string log =
      "LAB: up, kernel 6.12, 4 CPUs, nodes: 2\n"
      "LAB-BEGIN verify churn verify:churn\n"
      "LAB-FAIL verify churn numavm run: vCPU 1: triple fault (shutdown) at rip 0xfff0\n"
      "LAB-FAIL verify churn numavm run: vCPU 0: triple fault (shutdown) at rip 0xfff0\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].lab_failures, 2);
  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("CHURN"), std::string::npos) << table;
  EXPECT_NE(table.find("no result: the lab failed every time"), std::string::npos) << table;
}

// The clock starts when the lab lets go (the cpuset widened, the first
// touch over); a placement the lab forced before that, or one reached and
// lost again, is not convergence.
TEST(LabResultsTest, ConvergenceCountsFromTheWideningAndMustHold) {
  auto report = [](const std::vector<std::pair<double, double>>& series) {
    nlohmann::json j = SeriesReport(series);
    j["balance"] = nlohmann::json::object();
    j["phases"] = {{{"name", "first-touch"}, {"seconds", 0.1}}, {{"name", "run"}, {"seconds", 18}}};
    return j.dump();
  };
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-WIDEN numa02 numavm 20\n"
      "LAB-JSON numa02 numavm " +
      report({{10, 1.0}, {20, 1.0}, {25, 1.0}, {30, 0.5}, {35, 0.95}, {40, 0.97}}) +
      "\n"
      "LAB-WIDEN numa02 kernel 20\n"
      "LAB-JSON numa02 kernel " +
      report({{10, 1.0}, {25, 1.0}, {30, 0.5}}) +
      "\n"
      "LAB-JSON numa02 hard " +
      report({{10, 1.0}, {20, 1.0}, {25, 1.0}}) + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].widened, 20);
  EXPECT_DOUBLE_EQ(ConvergenceStart(runs[0]), 20);
  std::optional<Reached> numavm = PlacementReached(runs[0], 0.9);
  ASSERT_TRUE(numavm.has_value());
  EXPECT_DOUBLE_EQ(numavm->seconds, 15);                     // held from 35 s
  EXPECT_EQ(numavm->guest_bytes, 15ull << 30);               // the work since 20 s
  EXPECT_FALSE(PlacementReached(runs[1], 0.9).has_value());  // lost at 30 s
  // Past 90% once, held or not - after the first dip, which ends the
  // state the lab forced: 35 s; the kernel's 25 s before its dip is not.
  EXPECT_EQ(PlacementFirstReached(runs[0], 0.9), 15);
  EXPECT_FALSE(PlacementFirstReached(runs[1], 0.9).has_value());
  EXPECT_EQ(PlacementFirstReached(runs[2], 0.9), 2);  // HARD never dips
  EXPECT_FALSE(runs[2].widened.has_value());          // HARD: from its run phase
  EXPECT_DOUBLE_EQ(ConvergenceStart(runs[2]), 18);
  std::optional<Reached> hard = PlacementReached(runs[2], 0.9);
  ASSERT_TRUE(hard.has_value());
  EXPECT_DOUBLE_EQ(hard->seconds, 2);
}

// Once a vCPU has ended, the rest's memory is not the VM's: a lone vCPU on
// its own memory must not make the run look converged (a lab run whose
// vCPUs ended but one read 100% "placed" for 300 s).
TEST(LabResultsTest, PlacementEndsWhenTheFirstVcpuEnds) {
  nlohmann::json j = SeriesReport({{5, 0.5}, {10, 0.6}, {15, 1.0}, {20, 1.0}});
  j["placement_locality"] = 1.0;
  j["balance"] = nlohmann::json::object();
  for (size_t i = 0; i < 4; ++i) {
    j["placement_series"][i]["vcpu_nodes"] = i < 2 ? nlohmann::json{0, 1} : nlohmann::json{-1, 0};
  }
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\nLAB-JSON numa02 numavm " + j.dump() + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(PlacementReached(runs[0], 0.9).has_value());
  ASSERT_TRUE(runs[0].placement.has_value());
  EXPECT_DOUBLE_EQ(*runs[0].placement, 0.6);  // the last sample while both ran
}

// The guest work done before access locality first reached a target, from
// numavm run's named series (schema 1): the balancer's locality_series and
// each vCPU's progress.
TEST(LabResultsTest, BytesBeforeLocalityReadsTheNamedSeries) {
  LabRun run;
  run.report = nlohmann::json::parse(R"({
    "balance": {"locality_series": [{"seconds": 1.0, "locality": 0.5, "pages_migrated": 0},
                                    {"seconds": 2.0, "locality": 0.95, "pages_migrated": 9}]},
    "vcpu": [{"progress": [{"seconds": 0.5, "bytes": 100}, {"seconds": 1.5, "bytes": 300},
                           {"seconds": 2.5, "bytes": 900}]},
             {"progress": [{"seconds": 1.9, "bytes": 50}]}]})");
  EXPECT_EQ(BytesBeforeLocality(run, 0.9), std::optional<uint64_t>(350));
  EXPECT_EQ(BytesBeforeLocality(run, 0.99), std::nullopt) << "never reached";
}

TEST(LabResultsTest, AKernelRowThatDidNotScanSaysSo) {
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-JSON numa02 kernel {\"exit_code\": 0, \"balance\": {}, \"vcpu\": []}\n"
      "LAB-VMSTAT numa02 kernel rc=0 numa_pte_updates=0 pgmigrate_success=0\n";
  EXPECT_NE(LabTable(ParseLabLog(log)).find("the kernel did not scan"), std::string::npos);
}

}  // namespace
}  // namespace numavm::lab

namespace numavm::lab {
namespace {

// A Linux guest's row: numabench's throughput and the guest kernel's own
// NUMA counters from its console, numavm's moves and attribution from its
// report - each run's own, not the next run's.
TEST(LabResultsTest, ALinuxGuestRowShowsTheGuestsWorkAndBothBalancers) {
  nlohmann::json balance;
  balance["exit_code"] = 0;
  balance["balance"] = {{"pages_migrated", 1022}, {"access_locality", 0.75}};
  balance["sampling"] = {
      {"samples", 358}, {"unattributed", 12}, {"inferred_vcpu", 280}, {"cell_vcpu", 60}};
  nlohmann::json guest = balance;
  guest["balance"] = {{"pages_migrated", 0}, {"access_locality", nullptr}};
  const std::string log =
      "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
      "LAB-BEGIN linux balance linux:balance\n"
      "LINUX: NUMABENCH numa02 process 0 threads 2 elapsed 60.20 s bytes 7 MiB/s 1225.3\n"
      "LINUX: GUEST-VMSTAT numa_pte_updates 0\n"
      "LINUX: GUEST-VMSTAT numa_hint_faults 0\n"
      "LAB-JSON linux balance " +
      balance.dump() +
      "\n"
      "LAB-BEGIN linux guest linux:guest\n"
      "LINUX: NUMABENCH numa01 process 0 threads 1 elapsed 60.0 s bytes 7 MiB/s 500.5\n"
      "LINUX: NUMABENCH numa01 process 1 threads 1 elapsed 60.0 s bytes 7 MiB/s 600.5\n"
      "LINUX: GUEST-VMSTAT numa_pte_updates 547185\n"
      "LINUX: GUEST-VMSTAT numa_hint_faults 547183\n"
      "LINUX: GUEST-VMSTAT numa_hint_faults_local 547173\n"
      "LINUX: GUEST-VMSTAT numa_pages_migrated 6\n"
      "LAB-JSON linux guest " +
      guest.dump() + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_DOUBLE_EQ(runs[0].guest_mib_per_second.value_or(0), 1225.3);
  EXPECT_DOUBLE_EQ(runs[1].guest_mib_per_second.value_or(0), 1101.0) << "both processes";
  EXPECT_EQ(runs[1].guest_counters["numa_hint_faults_local"], 547173u);
  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("guest numabench 1225.3 MiB/s; numavm moved 1022, access 75.0% (358 "
                       "samples, 12 unattributed, 280 to a blocked vCPU, 60 by cell); the "
                       "guest's balancing: 0 PTE updates, 0 hint faults (0 local), 0 migrated"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("guest numabench 1101.0 MiB/s; numavm moved 0, access - (358 samples, 12 "
                       "unattributed, 280 to a blocked vCPU, 60 by cell); the guest's "
                       "balancing: 547185 PTE updates, 547183 hint faults (547173 local), 6 "
                       "migrated"),
            std::string::npos)
      << table;
}

// A numavm row says what its scan could afford: the budget, the host's time
// a probe page and an arming call (the figure `numavm simulate --arm-cost`
// takes: the run's mean where the report has it, else the last periods'
// smoothed figure; reports before 2026-12-06 have neither and show none),
// the fault's round trip and the rate.
TEST(LabResultsTest, ANumavmRowShowsWhatItsScanCost) {
  nlohmann::json report;
  report["exit_code"] = 0;
  report["balance"] = {{"pages_migrated", 512}, {"remigrations", 0}};
  report["sampling"] = {{"scan", "regions"},
                        {"sampler", "hint"},
                        {"stall_budget", 0.01},
                        {"host_seconds_per_probe", 0.0018},
                        {"host_seconds_per_call", 0.0144},
                        {"host_seconds_per_call_mean", 0.0061},
                        {"fault_cost_seconds", 0.00009},
                        {"rate_bytes_per_second", 12.5 * (1 << 20)},
                        {"host_cpu_seconds",
                         {{"arm", 3.4}, {"collect", 0.0}, {"decide", 1.3}, {"decide_view", 0.9}}}};
  nlohmann::json smoothed_only = report;
  smoothed_only["sampling"].erase("host_seconds_per_call_mean");
  nlohmann::json older = smoothed_only;
  older["sampling"].erase("host_seconds_per_call");
  older["sampling"]["host_cpu_seconds"].erase("decide_view");
  const std::string log =
      "LAB: up, kernel 6.12, 4 CPUs, nodes: 4\n"
      "LAB-BEGIN numa01 numavm numa01:numavm\n"
      "LAB-JSON numa01 numavm " +
      report.dump() +
      "\n"
      "LAB-BEGIN numa02 numavm numa02:numavm\n"
      "LAB-JSON numa02 numavm " +
      older.dump() +
      "\n"
      "LAB-BEGIN numa02_read numavm numa02_read:numavm\n"
      "LAB-JSON numa02_read numavm " +
      smoothed_only.dump() + "\n";
  const std::string table = LabTable(ParseLabLog(log));
  EXPECT_NE(table.find("(budget 1%, 1800 us/probe host, 6100 us/call, 90 us/fault, scan 12.5 "
                       "MiB/s)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(budget 1%, 1800 us/probe host, 14400 us/call, 90 us/fault, scan 12.5 "
                       "MiB/s)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(budget 1%, 1800 us/probe host, 90 us/fault, scan 12.5 MiB/s)"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(sampler CPU: arm 3.4 s, collect 0.0 s, decide 1.3 s (view calls 0.9 s))"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("(sampler CPU: arm 3.4 s, collect 0.0 s, decide 1.3 s)"), std::string::npos)
      << table;
}

}  // namespace
}  // namespace numavm::lab
