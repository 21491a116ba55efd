// Hostile payloads: the VM is stopped with a clear message and a distinct
// exit status; numavm itself never crashes and still prints its report.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::ProcessResult;
using testing::RunNumavm;

class HostileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
  ProcessResult Run(const std::string& hostile, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "run",           "--payload",      testing::PayloadPath(hostile), "--memory", "32M",
        "--report=json", "--quiet-console"};
    args.insert(args.end(), extra.begin(), extra.end());
    ProcessResult r = RunNumavm(args);
    EXPECT_EQ(r.term_signal, 0) << "numavm died from a signal";
    report_ = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(report_.is_discarded()) << "no JSON report: " << r.out;
    return r;
  }
  void ExpectStopped(const ProcessResult& r, int code, const std::string& end,
                     const std::string& needle) {
    EXPECT_EQ(r.exit_code, code) << r.err;
    EXPECT_EQ(report_["end"], end);
    EXPECT_NE(report_["message"].get<std::string>().find(needle), std::string::npos)
        << report_["message"];
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  nlohmann::json report_;
};

TEST_F(HostileTest, UnknownPortStopsTheVm) {
  ProcessResult r = Run("hostile_unknown_port");
  ExpectStopped(r, 3, "guest-fault", "vCPU 0: write to unknown I/O port 0x1234");
}

TEST_F(HostileTest, ConsoleFloodStopsTheVm) {
  ProcessResult r = Run("hostile_console_flood");
  ExpectStopped(r, 3, "guest-fault", "guest console output exceeded 1048576 bytes");
}

TEST_F(HostileTest, WriteOutsideRamStopsTheVm) {
  ProcessResult r = Run("hostile_wild_write");
  // 32 MiB of RAM; the payload writes 16 MiB past its end.
  ExpectStopped(r, 3, "guest-fault", "write of 8 bytes at guest-physical 0x3000000");
}

TEST_F(HostileTest, TripleFaultStopsTheVm) {
  ProcessResult r = Run("hostile_triple_fault");
  ExpectStopped(r, 3, "guest-fault", "triple fault");
}

// The runtime's IDT turns exceptions into a report of what and where.
TEST_F(HostileTest, InvalidOpcodeIsReportedWithItsRip) {
  ProcessResult r = Run("hostile_invalid_opcode");
  // The payload is loaded at 0x400000: the rip must point into it.
  ExpectStopped(r, 3, "guest-fault", "guest exception #UD (invalid opcode) [vector 6] at rip 0x4");
}

TEST_F(HostileTest, PageFaultIsReportedWithItsAddress) {
  ProcessResult r = Run("hostile_page_fault");
  ExpectStopped(r, 3, "guest-fault", "#PF (page fault) [vector 14]");
  EXPECT_NE(r.err.find("address 0x8000000000,"), std::string::npos) << r.err;
}

TEST_F(HostileTest, FaultOnABrokenStackIsStillReported) {
  ProcessResult r = Run("hostile_bad_stack");
  // A write fault (error code bit 1) just below the bogus rsp.
  ExpectStopped(r, 3, "guest-fault", "address 0x8000000ff8, error code 0x2, rsp 0x8000001000");
}

TEST_F(HostileTest, EndlessLoopEndsAtTheTimeout) {
  ProcessResult r = Run("hostile_endless_loop", {"--duration", "1s"});
  ExpectStopped(r, 4, "timeout", "timed out after 1s");
  EXPECT_LT(report_["elapsed_seconds"].get<double>(), 30.0);
  // A run that stopped making progress names what each vCPU did; the
  // looping one never said it exited (the timeout's kick does not count).
  EXPECT_NE(report_["message"].get<std::string>().find("; vCPU 0: "), std::string::npos)
      << report_["message"];
  EXPECT_NE(report_["message"].get<std::string>().find("on sampler probes, not exited"),
            std::string::npos)
      << report_["message"];
}

TEST_F(HostileTest, GarbageInTheMailboxIsContained) {
  ProcessResult r = Run("hostile_bad_mailbox");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(report_["end"], "completed");
  ASSERT_EQ(report_["phases"].size(), 1u);
  EXPECT_EQ(report_["phases"][0]["name"].get<std::string>().size(), 224u);
}

TEST_F(HostileTest, TwoVcpusFaultingTogetherReportOneReason) {
  ProcessResult r = Run("hostile_unknown_port", {"--vcpus", "2"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(report_["message"].get<std::string>().find("unknown I/O port"), std::string::npos);
}

}  // namespace
}  // namespace numavm
