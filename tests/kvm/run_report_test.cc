// The report of `numavm run`: the acceptance command of the bundled-VMM
// issue, and what each report format carries.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "balancer/actuation/protected_moves.h"
#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::RunNumavm;

class RunReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
};

TEST_F(RunReportTest, Numa02JsonHasPerVcpuThroughputAndMemoryPerNode) {
  testing::ProcessResult r = RunNumavm(
      {"run", "--payload", "numa02", "--vcpus", "2", "--memory", "512M", "--report=json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(testing::ReportSchemaProblems(r.out), "");
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["end"], "completed");
  EXPECT_EQ(j["memory_bytes"], 512ull << 20);
  // The same VM object `numavm report` shows for it while it runs.
  EXPECT_EQ(j["vm"]["kind"], "numavm-run");
  EXPECT_EQ(j["vm"]["status"], "completed");
  EXPECT_EQ(j["vm"]["vcpus"], 2);
  ASSERT_EQ(j["vcpu"].size(), 2u);
  for (const auto& v : j["vcpu"]) {
    EXPECT_GT(v["bytes"].get<uint64_t>(), 0u);
    EXPECT_GT(v["throughput_bytes_per_second"].get<double>(), 0.0);
    EXPECT_GE(v["progress"].size(), 2u);
  }
  // numa02's working set is all free guest memory: nearly all 512 MiB is
  // resident after the first touch, and every byte is on some host node.
  uint64_t resident = 0;
  for (auto& [node, bytes] : j["memory_per_node"]["bytes"].items()) {
    resident += bytes.get<uint64_t>();
  }
  EXPECT_GE(resident, 500ull << 20);
  EXPECT_LE(resident, 512ull << 20);
  EXPECT_GT(j["startup_seconds"].get<double>(), 0.0);
}

TEST_F(RunReportTest, TableNamesEveryVcpuAndNode) {
  testing::ProcessResult r = RunNumavm({"run", "--payload", "numa01", "--vcpus", "2", "--memory",
                                        "32M", "--quiet-console", "--", "size=2M", "iterations=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("end:       completed"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node 0"), std::string::npos) << r.out;
}

TEST_F(RunReportTest, GuestCellsAreDescribedToThePayload) {
  testing::ProcessResult r =
      RunNumavm({"run", "--payload", "numa02", "--vcpus", "2", "--cell", "16M:0", "--cell", "16M:1",
                 "--report=json", "--quiet-console", "--", "size=2M", "iterations=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["memory_bytes"], 32ull << 20);
  ASSERT_EQ(j["cells"].size(), 2u);
  EXPECT_EQ(j["cells"][1]["vcpus"], nlohmann::json::array({1}));
}

TEST_F(RunReportTest, EveryBackingRuns) {
  for (const char* backing : {"memfd", "anon", "thp"}) {
    testing::ProcessResult r =
        RunNumavm({"run", "--payload", "verify", "--backing", backing, "--memory", "32M",
                   "--report=json", "--quiet-console", "--", "size=1M", "iterations=1"});
    ASSERT_EQ(r.exit_code, 0) << backing << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["backing"], backing);
    EXPECT_EQ(j["results"]["mismatches"]["sum"], 0) << backing;
  }
}

// The alias process of unmapped moves (actuation/alias_process.h) around a
// whole run: started where pages may move unmapped (memfd, balancing on,
// --migrate-unmapped), not otherwise, and gone with numavm - no process of that
// name is left without its parent. On one node nothing moves, so its moves
// are in the unit tests.
TEST_F(RunReportTest, UnmappedMovesLeaveNoAliasProcessBehind) {
  auto orphans = [] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      const std::string pid = e.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat");
      std::string line;
      std::getline(stat, line);
      // "PID (numavm-alias) S PPID ...": an alias whose parent is gone
      // belongs to init.
      if (line.find("(numavm-alias) ") != std::string::npos &&
          line.substr(line.find(") ") + 4).rfind("1 ", 0) == 0) {
        ++n;
      }
    }
    return n;
  };
  const int before = orphans();
  // Protected moves where this kernel's move_pages sees pages under
  // PROT_NONE (Linux 6.5 and later), else mapped.
  const std::string protected_moves = CheckMovesUnderProtNone().ok() ? "protected" : "mapped";
  const std::vector<std::pair<std::vector<std::string>, std::string>> runs = {
      {{"--backing", "memfd", "--migrate-unmapped"}, "unmapped"},
      {{"--backing", "memfd", "--migrate-mapped"}, "mapped"},
      {{"--backing", "memfd"}, protected_moves},
      {{"--backing", "anon", "--migrate-unmapped"}, protected_moves},
      {{"--backing", "anon", "--migrate-protected"}, protected_moves}};
  for (const auto& [extra, moves] : runs) {
    std::vector<std::string> args = {"run", "--payload", "numa02", "--vcpus",      "2", "--memory",
                                     "64M", "--balance", "on",     "--report=json"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {"--", "seconds=2"});
    const std::string what = absl::StrJoin(extra, " ");
    testing::ProcessResult r = RunNumavm(args);
    ASSERT_EQ(r.exit_code, 0) << what << ": " << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["end"], "completed") << what;
    EXPECT_EQ(j["balance"]["page_moves"], moves) << what;
    // Nothing said about moving pages mapped where they move otherwise.
    for (const auto& note : j["notes"]) {
      if (moves == "mapped") break;
      EXPECT_EQ(note.get<std::string>().find("pages move where they are mapped"), std::string::npos)
          << what << ": " << note;
    }
    EXPECT_EQ(j["balance"]["move_seconds"]["batches"], 0) << what << ": one node";
  }
  EXPECT_EQ(orphans(), before);
}

TEST_F(RunReportTest, PlacementOnOneNodeSaysTheBoundIsTrivial) {
  testing::ProcessResult r =
      RunNumavm({"run", "--payload", "numa02", "--placement=hard", "--memory", "32M",
                 "--report=json", "--quiet-console", "--", "size=1M", "iterations=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["placement"], "hard");
  if (j["host_nodes"].size() == 1) {
    ASSERT_FALSE(j["notes"].empty());
    EXPECT_NE(j["notes"][0].get<std::string>().find("bound is trivial"), std::string::npos);
  }
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

TEST(LiveStatsTest, StatsIntervalPrintsWhileTheVmRuns) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  testing::ProcessResult r = testing::RunNumavm(
      {"run", "--payload", "numa02", "--vcpus", "2", "--memory", "32M", "--quiet-console",
       "--stats-interval", "200ms", "--", "size=4M", "seconds=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int lines = 0;
  size_t at = 0;
  while ((at = r.err.find("numavm: ", at)) != std::string::npos) {
    ++lines;
    at += 8;
  }
  EXPECT_GE(lines, 5) << r.err;
  // Every figure labelled (cli/run_progress.h).
  for (const char* label : {"s | guest work ", " (vCPU 0: ", "| samples ", "| access locality ",
                            "| migrated ", "| vCPU moves ", "| scan period "}) {
    EXPECT_NE(r.err.find(label), std::string::npos) << label << "\n" << r.err;
  }
}

// A bundled VM is visible to `numavm report` while it runs, with its size,
// vCPUs, memory per node and sampled access locality.
TEST(RunRegistrationTest, NumavmReportShowsARunningVm) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  char pattern[] = "/tmp/numavm-run-XXXXXX";
  const std::string runtime = mkdtemp(pattern);
  setenv("NUMAVM_RUNTIME_DIR", runtime.c_str(), 1);
  testing::BackgroundNumavm vm({"run", "--payload", "numa02", "--vcpus", "2", "--memory", "64M",
                                "--quiet-console", "--balance", "on", "--scan-window", "64M",
                                "--scan-period", "200ms", "--", "seconds=6"});
  nlohmann::json found;
  for (int i = 0; i < 100 && found.is_null(); ++i) {
    testing::ProcessResult r = testing::RunNumavm({"report", "--report", "json", "--no-libvirt"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    for (const auto& v : j["vms"]) {
      if (v["kind"] == "numavm-run" && v["pid"] == vm.pid() && !v["access_locality"].is_null()) {
        found = v;
      }
    }
    if (found.is_null()) usleep(100000);
  }
  ASSERT_FALSE(found.is_null()) << vm.err();
  EXPECT_EQ(found["vcpus"], 2);
  EXPECT_EQ(found["memory_bytes"], 64u << 20);
  EXPECT_EQ(found["manager"], "numavm run");
  EXPECT_EQ(found["mode"], "on");
  EXPECT_GT(found["memory_per_node"]["0"].get<uint64_t>(), 0u);
  EXPECT_DOUBLE_EQ(found["access_locality"].get<double>(), 1.0) << "one node: all local";
  testing::ProcessResult done = vm.Wait(120);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  testing::ProcessResult after = testing::RunNumavm({"report", "--report", "json", "--no-libvirt"});
  EXPECT_EQ(nlohmann::json::parse(after.out)["vms"].size(), 0u) << "gone with its process";
  unsetenv("NUMAVM_RUNTIME_DIR");
  std::filesystem::remove_all(runtime);
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// A recording the user asked for that was lost is an error exit (5), with
// the VM's report still printed.
TEST(RunEndingTest, ALostRecordingIsAnErrorWithTheReport) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  testing::ProcessResult r = testing::RunNumavm(
      {"run", "--payload", "numa02", "--vcpus", "2", "--memory", "32M", "--quiet-console",
       "--sampler", "ring", "--record", "/dev/full", "--", "size=4M", "seconds=1"});
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.out.find("end:       completed"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("--record /dev/full: "), std::string::npos) << r.err;
}

// Ctrl-C, again and again, from the start to the end of a run: the first
// stops the VM; none of the later ones (while the report is written) kills
// numavm. It exits 130 with its report, every time.
TEST(RunEndingTest, RepeatedInterruptsEndWithTheReportAndExit130) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  for (int sig : {SIGINT, SIGTERM}) {
    testing::BackgroundNumavm run(
        {"run", "--payload", "idle", "--quiet-console", "--", "seconds=30"});
    usleep(300 * 1000);  // the VM is starting or running
    int sent = 0;
    while (run.running() && sent < 200000) {
      run.Signal(sig);
      ++sent;
      usleep(100);
    }
    testing::ProcessResult r = run.Wait(30);
    EXPECT_EQ(r.term_signal, 0) << "killed by signal " << r.term_signal << " after " << sent;
    EXPECT_EQ(r.exit_code, 130) << r.err;
    EXPECT_NE(r.out.find("end:       stopped"), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace numavm
