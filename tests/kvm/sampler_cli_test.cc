// `numavm run --sampler=S`: counters in the JSON report, reads seen only by
// hinting faults, integrity under the most aggressive settings, and the
// backing checks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "tests/support/numavm_process.h"
#include "vmm/fault_probe.h"

namespace numavm {
namespace {

using testing::ProcessResult;
using testing::RunNumavm;

nlohmann::json RunJson(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"run", "--report=json", "--quiet-console", "--duration", "300s"};
  // Write-protect faults are for anonymous memory, and evict and PROT_NONE
  // faults are what sees reads there (flags before any "--").
  for (size_t i = 0; i + 1 < args.size() && args[i] != "--"; ++i) {
    if (args[i] == "--sampler" &&
        (args[i + 1] == "wp" || args[i + 1] == "evict" || args[i + 1] == "prot")) {
      all.insert(all.end(), {"--backing", "anon"});
    }
  }
  all.insert(all.end(), args.begin(), args.end());
  ProcessResult r = RunNumavm(all);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// Samples the sampler took of pages in the workload's heap, per kind.
struct Counts {
  uint64_t samples, reads, writes, armed;
};
Counts CountsOf(const nlohmann::json& j) {
  const auto& s = j["sampling"];
  return {s["samples"], s["reads"], s["writes"], s["pages_armed"]};
}

class SamplerCliTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
    if (GetParam() == "prot" && !KvmNamesFaultingPages()) {
      GTEST_SKIP() << "KVM does not name the page of a PROT_NONE fault here";
    }
  }
};

TEST_P(SamplerCliTest, Numa02IsSeenAndCounted) {
  nlohmann::json j =
      RunJson({"--payload", "numa02", "--vcpus", "2", "--memory", "64M", "--sampler", GetParam(),
               "--scan-window", "16M", "--scan-period", "100ms", "--", "size=8M", "seconds=2"});
  ASSERT_EQ(j["end"], "completed");
  EXPECT_EQ(j["sampling"]["sampler"], GetParam());
  Counts c = CountsOf(j);
  EXPECT_GT(c.armed, 0u);
  // PROT_NONE faults do not tell reads from writes: all are samples.
  EXPECT_GT(GetParam() == "prot" ? c.samples : c.writes, 1000u)
      << "numa02 writes 2048 pages over and over";
  EXPECT_GE(j["sampling"]["windows"].get<uint64_t>(), 10u);
  if (GetParam() != "dirtylog") {
    // Attributing samplers saw both vCPUs.
    for (const auto& n : j["sampling"]["per_vcpu"]) EXPECT_GT(n.get<uint64_t>(), 100u);
  }
}

TEST_P(SamplerCliTest, Numa02ReadIsSeenOnlyByMinorEvictAndProtNoneHintingFaults) {
  nlohmann::json j = RunJson({"--payload", "numa02_read", "--vcpus", "2", "--memory", "64M",
                              "--sampler", GetParam(), "--scan-window", "16M", "--scan-period",
                              "100ms", "--", "size=8M", "seconds=2"});
  ASSERT_EQ(j["end"], "completed");
  Counts c = CountsOf(j);
  constexpr uint64_t kHeapPages = (8ull << 20) / 4096;
  if (GetParam() == "hint" || GetParam() == "evict") {
    // Reads of the heap's pages, window after window (at least as many
    // samples as pages, even on a loaded machine); evict on anonymous
    // memory as hint on memfd.
    EXPECT_GT(c.reads, kHeapPages);
    EXPECT_LT(c.writes, c.reads / 10);
    if (GetParam() == "evict") {
      // Where taking the probes away cost the arming thread's time, by step.
      const nlohmann::json& e = j["sampling"]["evict_cpu_seconds"];
      for (const char* step : {"protect", "read", "query", "free"}) {
        ASSERT_TRUE(e.contains(step)) << e.dump();
      }
      EXPECT_GT(e["protect"].get<double>() + e["read"].get<double>() + e["query"].get<double>() +
                    e["free"].get<double>(),
                0)
          << e.dump();
    } else {
      EXPECT_FALSE(j["sampling"].contains("evict_cpu_seconds"));
    }
  } else if (GetParam() == "prot") {
    // The same on anonymous memory: the heap's pages, read by their vCPU,
    // window after window.
    EXPECT_GT(c.samples, kHeapPages);
    for (const auto& n : j["sampling"]["per_vcpu"]) EXPECT_GT(n.get<uint64_t>(), kHeapPages / 4);
  } else {
    // Writes only: vCPU 0's first touch of each page, then nothing but the
    // runtime's own stack and mailbox pages, although the vCPUs read the
    // heap for two seconds.
    EXPECT_LE(c.samples, kHeapPages + 100);
  }
}

INSTANTIATE_TEST_SUITE_P(Samplers, SamplerCliTest,
                         ::testing::Values("hint", "wp", "evict", "prot", "ring", "dirtylog"));

// An idle VM is not scanned: after its first touch, no window is armed while
// its vCPUs sleep; a busy VM is scanned every period.
TEST(SamplerIdle, IdleVmsAreNotScanned) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  nlohmann::json idle =
      RunJson({"--payload", "idle", "--vcpus", "2", "--memory", "64M", "--scan-window", "16M",
               "--scan-period", "100ms", "--", "size=8M", "iterations=20"});
  const uint64_t window_pages = (16 << 20) / 4096;
  EXPECT_GE(idle["sampling"]["idle_periods"].get<uint64_t>(), 10u);
  EXPECT_LE(idle["sampling"]["pages_armed"].get<uint64_t>(), 3 * window_pages);
  nlohmann::json busy =
      RunJson({"--payload", "numa02", "--vcpus", "2", "--memory", "64M", "--scan-window", "16M",
               "--scan-period", "100ms", "--", "size=8M", "seconds=2"});
  // A period or two around start and exit may look idle; the run may not.
  EXPECT_LT(busy["sampling"]["idle_periods"].get<uint64_t>(),
            busy["sampling"]["windows"].get<uint64_t>() / 4);
  EXPECT_GE(busy["sampling"]["pages_armed"].get<uint64_t>(), 10 * window_pages);
}

TEST(SamplerBacking, HintOnAnonymousMemoryIsAClearError) {
  ProcessResult r = RunNumavm({"run", "--backing", "anon", "--sampler", "hint"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sampler=hint needs --backing=memfd or hugetlb"), std::string::npos)
      << r.err;
}

TEST(SamplerBacking, WriteProtectOnMemfdIsAClearError) {
  ProcessResult r = RunNumavm({"run", "--backing", "memfd", "--sampler", "wp"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sampler=wp needs --backing=anon or thp"), std::string::npos) << r.err;
}

// Anonymous memory (QEMU's default) has no page cache for minor hinting
// faults: on anon the default is evict hinting faults on the same probes,
// which see reads and writes on any kernel; on thp (where evicting a part
// would split a huge page) PROT_NONE hinting faults where KVM names the
// faulting page (vmm/fault_probe.h), which see reads too, else
// write-protect hinting faults, and the report says reads are not seen.
// Either way the samples name their vCPU, and only armed probes fault -
// every sample is a page armed - where the dirty ring made every first
// write to any page a fault (issue 12: numa01 at 0.03x in the lab).
TEST(SamplerBacking, DefaultSamplerOnAnonymousMemoryIsAHintingFaultThatSeesWhatItCan) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  const bool prot = KvmNamesFaultingPages();
  for (const std::string backing : {"anon", "thp"}) {
    nlohmann::json j =
        RunJson({"--backing", backing, "--memory", "32M", "--", "size=4M", "iterations=2"});
    const std::string expected = backing == "anon" ? "evict" : prot ? "prot" : "wp";
    EXPECT_EQ(j["sampling"]["sampler"], expected) << backing;
    ASSERT_FALSE(j["notes"].empty()) << backing;
    const std::string note = j["notes"][0].get<std::string>();
    if (expected == "evict") {
      EXPECT_NE(note.find("evict hinting faults"), std::string::npos) << note;
      EXPECT_NE(note.find("see reads and writes"), std::string::npos) << note;
    } else if (expected == "prot") {
      EXPECT_NE(note.find("PROT_NONE hinting faults"), std::string::npos) << note;
      EXPECT_NE(note.find("see reads and writes"), std::string::npos) << note;
    } else {
      EXPECT_NE(note.find("write-protect hinting faults"), std::string::npos) << note;
      EXPECT_NE(note.find("reads are not seen"), std::string::npos) << note;
    }
    const uint64_t samples = j["sampling"]["samples"];
    EXPECT_GT(samples, 0u) << backing;
    EXPECT_LE(samples, j["sampling"]["pages_armed"].get<uint64_t>()) << backing;
    EXPECT_EQ(j["sampling"]["unattributed"].get<uint64_t>(), 0u) << backing;
  }
}

TEST(SamplerBacking, EvictOnALinuxGuestOrOnHugePagesIsAClearError) {
  ProcessResult r = RunNumavm({"run", "--backing", "thp", "--sampler", "evict"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sampler=evict needs --backing=anon"), std::string::npos) << r.err;
  r = RunNumavm({"run", "--backing", "anon", "--sampler", "evict", "--kernel", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--sampler=evict is not for Linux guests"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace numavm
