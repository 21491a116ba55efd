// Every guest-tools workload runs to completion on real KVM with 1 and 2
// vCPUs and does the work its definition says, vCPU by vCPU.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::RunNumavm;

constexpr uint64_t kSize = 2ull << 20;  // working set of every run here
constexpr uint64_t kLine = 64;

struct Case {
  std::string workload;
  int vcpus;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.workload << "/" << c.vcpus; }

std::string Name(const ::testing::TestParamInfo<Case>& info) {
  return absl::StrCat(info.param.workload, "_", info.param.vcpus, "vcpu");
}

// Bytes each vCPU must report for one iteration over kSize, by definition of
// the workload (see guest-tools/workloads and README's workload table).
std::vector<uint64_t> ExpectedBytes(const std::string& w, int vcpus) {
  std::vector<uint64_t> bytes(vcpus, 0);
  if (w == "idle") return bytes;
  if (w == "numa01" || w == "numa01_read") {
    // Two groups (one if a single vCPU); each vCPU streams its group's region.
    int groups = vcpus >= 2 ? 2 : 1;
    for (int v = 0; v < vcpus; ++v) bytes[v] = kSize / groups;
    return bytes;
  }
  if (w == "numa02_smt") {
    int active = (vcpus + 1) / 2;
    for (int v = 0; v < active; ++v) bytes[v] = kSize / active;
    return bytes;
  }
  if (w == "shared") {
    // Every vCPU touches one line of every page of the shared region.
    for (int v = 0; v < vcpus; ++v) bytes[v] = kSize / 4096 * kLine;
    return bytes;
  }
  if (w == "verify") {
    // Writes then re-reads its whole slice.
    for (int v = 0; v < vcpus; ++v) bytes[v] = 2 * kSize / vcpus;
    return bytes;
  }
  if (w == "phase") {
    // One pass in each half over its share of a group region (kSize / 2).
    int groups = vcpus >= 2 ? 2 : 1;
    for (int v = 0; v < vcpus; ++v) bytes[v] = 2 * (kSize / 2) / (vcpus / groups);
    return bytes;
  }
  // numa01_thread_alloc, numa02, numa02_read, numa02_chase: own slice.
  for (int v = 0; v < vcpus; ++v) bytes[v] = kSize / vcpus;
  return bytes;
}

class WorkloadTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
};

TEST_P(WorkloadTest, RunsToCompletionDoingItsWork) {
  const Case& c = GetParam();
  testing::ProcessResult r =
      RunNumavm({"run", "--payload", c.workload, "--vcpus", absl::StrCat(c.vcpus), "--memory",
                 "32M", "--report=json", "--quiet-console", "--duration", "300s", "--",
                 absl::StrCat("size=", kSize), "iterations=1"});
  ASSERT_EQ(r.term_signal, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  nlohmann::json report = nlohmann::json::parse(r.out);
  EXPECT_EQ(report["end"], "completed");
  EXPECT_EQ(report["payload"], c.workload);
  ASSERT_EQ(report["vcpu"].size(), static_cast<size_t>(c.vcpus));
  std::vector<uint64_t> expected = ExpectedBytes(c.workload, c.vcpus);
  for (int v = 0; v < c.vcpus; ++v) {
    const nlohmann::json& vcpu = report["vcpu"][v];
    EXPECT_EQ(vcpu["exit_status"], 0) << "vCPU " << v;
    EXPECT_EQ(vcpu["bytes"].get<uint64_t>(), expected[v]) << "vCPU " << v;
    EXPECT_TRUE(vcpu["started_seconds"].is_number()) << "vCPU " << v;
  }
  // The working set was touched, so it is resident somewhere.
  uint64_t resident = 0;
  for (auto& [node, bytes] : report["memory_per_node"]["bytes"].items()) {
    resident += bytes.get<uint64_t>();
  }
  EXPECT_GE(resident, kSize);
  if (c.workload == "verify") {
    EXPECT_EQ(report["results"]["mismatches"]["sum"], 0);
    EXPECT_EQ(report["results"]["generations"]["sum"], c.vcpus);
  }
  if (c.workload == "phase") {
    std::vector<std::string> names;
    for (const auto& p : report["phases"]) names.push_back(p["name"]);
    EXPECT_EQ(names, (std::vector<std::string>{"first-touch", "phase-1", "phase-2"}));
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const char* w : {"numa01", "numa01_thread_alloc", "numa02", "numa02_smt", "numa01_read",
                        "numa02_read", "numa02_chase", "shared", "phase", "idle", "verify"}) {
    for (int vcpus : {1, 2}) cases.push_back({w, vcpus});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, WorkloadTest, ::testing::ValuesIn(AllCases()), Name);

// On a one-node host the balancer sees every access as local and moves
// nothing, for every workload (2 vCPUs).
class BalanceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
};

TEST_P(BalanceTest, OnOneNodeMigratesNothingAndIsFullyLocal) {
  const std::string& workload = GetParam();
  testing::ProcessResult r = RunNumavm({"run",
                                        "--payload",
                                        workload,
                                        "--vcpus",
                                        "2",
                                        "--memory",
                                        "32M",
                                        "--report=json",
                                        "--quiet-console",
                                        "--duration",
                                        "300s",
                                        "--balance",
                                        "on",
                                        "--scan-window",
                                        "32M",
                                        "--scan-period",
                                        "100ms",
                                        "--",
                                        absl::StrCat("size=", kSize),
                                        "seconds=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  if (j["host_nodes"].size() != 1) GTEST_SKIP() << "not a one-node host";
  EXPECT_EQ(j["balance"]["mode"], "on");
  EXPECT_EQ(j["balance"]["pages_migrated"], 0);
  EXPECT_EQ(j["balance"]["vcpu_moves"], 0);
  EXPECT_EQ(j["balance"]["error"], "");
  if (workload != "idle") {
    EXPECT_GT(j["balance"]["attributed"].get<uint64_t>(), 0u) << "nothing was observed";
    EXPECT_EQ(j["balance"]["access_locality"], 1.0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllWorkloads, BalanceTest,
                         ::testing::Values("numa01", "numa01_thread_alloc", "numa02", "numa02_smt",
                                           "numa01_read", "numa02_read", "numa02_chase", "shared",
                                           "phase", "idle", "verify"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace numavm
