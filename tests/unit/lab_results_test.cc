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
      "LAB-JSON verify churn " + VerifyJson(1, 0) + "\n"
      "LAB-VMSTAT verify churn rc=0 numa_pages_migrated=0 pgmigrate_success=220000\n"
      "LAB-BEGIN verify churn\n"
      "LAB-JSON verify churn " + VerifyJson(2, 3) + "\n"
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
  const std::string log = "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\nLAB-JSON verify churn " +
                          j.dump() + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].mismatches.has_value());
  const std::string table = LabTable(runs);
  EXPECT_NE(table.find("exit 3 mismatches not reported"), std::string::npos) << table;
}

TEST(LabResultsTest, ARerunOfTheSameCaseReplacesTheEarlierOne) {
  const std::string log = "LAB: up, kernel 6.1, 4 CPUs, nodes: 2\n"
                          "LAB-JSON verify churn " + VerifyJson(2, 7) + "\n"
                          "LAB-JSON verify churn " + VerifyJson(2, 0) + "\n";
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].mismatches, 0u);
}

}  // namespace
}  // namespace numavm::lab
