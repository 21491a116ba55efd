// Guest data integrity while samplers arm and harvest as fast as they can:
// a minute of guest time per sampler. Its own binary so that CTest starts
// these long tests first (COST).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/numavm_process.h"
#include "vmm/fault_probe.h"

namespace numavm {
namespace {

class IntegrityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
    if (GetParam() == "prot" && !KvmNamesFaultingPages()) {
      GTEST_SKIP() << "KVM does not name the page of a PROT_NONE fault here";
    }
  }
};

// The verify workload under the most aggressive setting (the whole of RAM
// armed every 10 ms) for 60 s of guest time: not one mismatch.
TEST_P(IntegrityTest, VerifyHasNoMismatchesUnderAggressiveSampling) {
  // Write-protect and evict faults are for anonymous memory, and so is the
  // PROT_NONE sampler's default use.
  const std::string backing =
      GetParam() == "wp" || GetParam() == "evict" || GetParam() == "prot" ? "anon" : "memfd";
  testing::ProcessResult r = testing::RunNumavm(
      {"run",           "--report=json", "--quiet-console", "--duration", "300s",
       "--payload",     "verify",        "--vcpus",         "2",          "--memory",
       "32M",           "--backing",     backing,           "--sampler",  GetParam(),
       "--scan-window", "32M",           "--scan-period",   "10ms",       "--",
       "size=4M",       "seconds=60"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["end"], "completed");
  EXPECT_EQ(j["results"]["mismatches"]["sum"], 0);
  const uint64_t generations = j["results"]["generations"]["sum"].get<uint64_t>();
  EXPECT_GE(generations, 4u);
  // The sampler kept up with the guest: every generation rewrites each
  // page of a vCPU's slice (4 MiB / 2 vCPUs = 512 pages) while everything
  // is armed, so it saw each of those rewrites at least once. Scaled by
  // the generations the guest managed, not by a count a loaded machine
  // may not reach in 60 s.
  constexpr uint64_t kPagesPerVcpu = (4u << 20) / 4096 / 2;
  EXPECT_GE(j["sampling"]["samples"].get<uint64_t>(), kPagesPerVcpu * generations)
      << "generations " << generations;
  EXPECT_EQ(j["sampling"]["error"], "");
}

INSTANTIATE_TEST_SUITE_P(Samplers, IntegrityTest,
                         ::testing::Values("hint", "wp", "evict", "prot", "ring", "dirtylog"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace numavm
