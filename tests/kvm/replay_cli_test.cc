// `numavm run --record` then `numavm replay`: the pipe works end to end (a
// smoke test - the policy is judged on the shipped traces in
// tests/unit/shipped_traces_test.cc, never on a trace recorded here, whose
// figures move with the machine's load).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::ProcessResult;
using testing::RunNumavm;
using testing::TempFile;

TEST(ReplayCli, ARecordedStreamReplaysAndMovesPages) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  TempFile trace("w.trace", "");
  ProcessResult run =
      RunNumavm({"run", "--quiet-console", "--duration", "300s", "--payload", "numa02", "--vcpus",
                 "2", "--memory", "64M", "--scan-window", "64M", "--scan-period", "200ms",
                 "--record", trace.path(), "--", "size=8M", "seconds=10"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("access stream recorded in"), std::string::npos) << run.out;
  // One CPU a node: the two vCPUs cannot share one. (On nodes of 4 CPUs
  // the VM fits one node and gathers there with its memory, moving no
  // page: docs/simulate.md, "A VM that fits a node gathers there".)
  ProcessResult r =
      RunNumavm({"replay", trace.path(), "--report=json", "--topology",
                 absl::StrCat(NUMAVM_SOURCE_DIR, "/configs/topology-4node-1cpu.toml")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["trace"]["payload"], "numa02");
  EXPECT_EQ(j["trace"]["vcpus"], 2);
  EXPECT_GT(j["trace"]["samples"].get<uint64_t>(), 0u);
  EXPECT_GT(j["balance"]["pages_migrated"].get<uint64_t>(), 0u)
      << "memory first touched on one node must move";
}

TEST(ReplayCli, RecordNeedsASamplerAndAWritableFile) {
  ProcessResult off = RunNumavm({"run", "--sampler=off", "--record", "/tmp/x.trace"});
  EXPECT_EQ(off.exit_code, 2);
  EXPECT_NE(off.err.find("--record needs a sampler"), std::string::npos) << off.err;
  if (!testing::KvmAvailable()) return;
  ProcessResult bad = RunNumavm({"run", "--record", "/nonexistent-dir/x.trace", "--memory", "16M"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cannot create trace /nonexistent-dir/x.trace"), std::string::npos)
      << bad.err;
}

TEST(ReplayCli, BadTracesAndTopologiesAreClearErrors) {
  const std::string topology = absl::StrCat(NUMAVM_SOURCE_DIR, "/configs/topology-2node.toml");
  TempFile junk("junk.trace", "numavm-trace 1\nvm vcpus=2 pages=16\nb 5 99.0.w\n");
  ProcessResult r = RunNumavm({"replay", junk.path(), "--topology", topology});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(":3: gfn 0x99 is outside the 16 guest pages"), std::string::npos) << r.err;
  TempFile good("good.trace", "numavm-trace 1\nvm vcpus=1 pages=16\nb 5 1.0.w\n");
  ProcessResult t = RunNumavm({"replay", good.path(), "--topology", good.path()});
  EXPECT_EQ(t.exit_code, 2) << "a trace is not a topology";
  ProcessResult f =
      RunNumavm({"replay", good.path(), "--topology", topology, "--first-touch", "everywhere"});
  EXPECT_EQ(f.exit_code, 2);
  EXPECT_NE(f.err.find("--first-touch: 'everywhere': want boot or sampled"), std::string::npos)
      << f.err;
  ProcessResult ok = RunNumavm({"replay", good.path(), "--topology", topology});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("1 periods"), std::string::npos) << ok.out;
}

}  // namespace
}  // namespace numavm
