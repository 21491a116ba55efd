// Guest data integrity while samplers arm and harvest as fast as they can:
// a minute of guest time per sampler. Its own binary so that CTest starts
// these long tests first (COST).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

class IntegrityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
};

// The verify workload under the most aggressive setting (the whole of RAM
// armed every 10 ms) for 60 s of guest time: not one mismatch.
TEST_P(IntegrityTest, VerifyHasNoMismatchesUnderAggressiveSampling) {
  testing::ProcessResult r = testing::RunNumavm(
      {"run", "--report=json", "--quiet-console", "--timeout", "300s", "--payload", "verify",
       "--vcpus", "2", "--memory", "32M", "--sampler", GetParam(), "--scan-window", "32M",
       "--scan-period", "10ms", "--", "size=4M", "seconds=60"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["end"], "completed");
  EXPECT_EQ(j["results"]["mismatches"]["sum"], 0);
  EXPECT_GE(j["results"]["generations"]["sum"].get<uint64_t>(), 4u);
  EXPECT_GT(j["sampling"]["samples"].get<uint64_t>(), 10000u);
  EXPECT_EQ(j["sampling"]["error"], "");
}

INSTANTIATE_TEST_SUITE_P(Samplers, IntegrityTest, ::testing::Values("hint", "ring", "dirtylog"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace numavm
