// Each sampler, on real KVM, against a probe whose accesses are known: every
// page a vCPU touches inside an armed window is reported (with that vCPU
// where the sampler attributes), and no untouched workload page is.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/sampling_loop.h"
#include "cli/sampling_setup.h"
#include "tests/support/numavm_process.h"
#include "vmm/elf_payload.h"
#include "vmm/fault_probe.h"
#include "vmm/guest_abi.h"
#include "vmm/virtual_machine.h"

namespace numavm {
namespace {

constexpr uint64_t kPages = 48;
constexpr int kVcpus = 2;

struct Observed {
  std::vector<AccessSample> samples;
  SamplerStats stats;
  RunOutcome outcome;
};

// Runs the touch probe with `sampler`, a window covering all of RAM and a
// short period, and returns every sample.
Observed RunProbe(SamplerKind kind, bool write) {
  Observed observed;
  RunOptions options;
  options.vm.vcpus = kVcpus;
  options.vm.memory_bytes = 32ull << 20;
  options.vm.echo_console = false;
  // Write-protect faults are for anonymous memory, and evict and PROT_NONE
  // faults are what sees reads there.
  if (kind == SamplerKind::kWriteProtect || kind == SamplerKind::kEvict ||
      kind == SamplerKind::kProtNone) {
    options.vm.backing = Backing::kAnon;
  }
  options.vm.payload_args = absl::StrCat("pages=", kPages, " write=", write ? 1 : 0, " seconds=2");
  options.sampling.sampler = kind;
  options.sampling.sampler_chosen = true;
  options.sampling.window_bytes = options.vm.memory_bytes;
  options.sampling.ring_entries = 16384;
  EXPECT_TRUE(PrepareSampling(options).ok());
  EXPECT_TRUE(NormalizeVmConfig(options.vm).ok());
  absl::StatusOr<ElfPayload> payload = ReadElfPayload(testing::PayloadPath("probe_touch"));
  EXPECT_TRUE(payload.ok()) << payload.status();
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(options.vm, *payload, nullptr);
  EXPECT_TRUE(vm.ok()) << vm.status();
  absl::StatusOr<std::unique_ptr<AccessSampler>> sampler = CreateSampler(options.sampling, **vm);
  EXPECT_TRUE(sampler.ok()) << sampler.status();
  absl::Mutex mu;
  ScanConfig scan = ScanConfigOf(options);
  scan.period = absl::Milliseconds(100);
  SamplingLoop loop(**sampler, scan, [&](const AccessBatch& batch) {
    absl::MutexLock lock(&mu);
    observed.samples.insert(observed.samples.end(), batch.begin(), batch.end());
    return PeriodOutcome{};
  });
  EXPECT_TRUE(loop.Start().ok());
  observed.outcome = (*vm)->Run();
  loop.Stop();
  EXPECT_TRUE(loop.status().ok()) << loop.status();
  observed.stats = (*sampler)->stats();
  return observed;
}

uint64_t FirstGfnOf(int vcpu) {
  return abi::kHeapStart / 4096 + static_cast<uint64_t>(vcpu) * 2 * kPages;
}

// Which vCPU's range a heap gfn belongs to, or -1 if untouched.
int OwnerOf(uint64_t gfn) {
  for (int v = 0; v < kVcpus; ++v) {
    if (gfn >= FirstGfnOf(v) && gfn < FirstGfnOf(v) + kPages) return v;
  }
  return -1;
}

void ExpectExactCoverage(const Observed& o, bool attributes, AccessKind kind) {
  ASSERT_EQ(o.outcome.end, RunEnd::kCompleted) << o.outcome.message;
  std::map<int, std::set<uint64_t>> seen;  // vCPU -> heap gfns
  for (const AccessSample& s : o.samples) {
    if (s.gfn < abi::kHeapStart / 4096) continue;  // runtime: stacks, mailboxes
    int owner = OwnerOf(s.gfn);
    ASSERT_NE(owner, -1) << "gfn 0x" << std::hex << s.gfn << " was never touched";
    EXPECT_EQ(s.kind, kind) << "gfn 0x" << std::hex << s.gfn;
    if (attributes) {
      ASSERT_EQ(s.vcpu, owner) << "gfn 0x" << std::hex << s.gfn;
    } else {
      EXPECT_EQ(s.vcpu, kUnknownVcpu);
    }
    seen[owner].insert(s.gfn);
  }
  for (int v = 0; v < kVcpus; ++v) {
    EXPECT_EQ(seen[v].size(), kPages) << "vCPU " << v;
  }
  EXPECT_GT(o.stats.pages_armed, 0u);
  EXPECT_EQ(o.stats.samples, o.samples.size());
}

class SamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  }
};

TEST_F(SamplerTest, HintFaultsSeeEveryWriteWithItsVcpu) {
  ExpectExactCoverage(RunProbe(SamplerKind::kHint, /*write=*/true), true, AccessKind::kWrite);
}

TEST_F(SamplerTest, HintFaultsSeeReads) {
  Observed o = RunProbe(SamplerKind::kHint, /*write=*/false);
  ExpectExactCoverage(o, true, AccessKind::kRead);
  EXPECT_GT(o.stats.reads, 2 * kPages);
}

TEST_F(SamplerTest, WriteProtectFaultsSeeEveryWriteWithItsVcpuOnAnonymousMemory) {
  Observed o = RunProbe(SamplerKind::kWriteProtect, /*write=*/true);
  ExpectExactCoverage(o, true, AccessKind::kWrite);
  EXPECT_EQ(o.stats.reads, 0u);
}

// The kernel's way: every page a vCPU only reads, on anonymous memory, is
// seen with that vCPU - what no write sampler can see.
TEST_F(SamplerTest, ProtNoneFaultsSeeEveryReadWithItsVcpuOnAnonymousMemory) {
  if (!KvmNamesFaultingPages())
    GTEST_SKIP() << "KVM does not name the page of a PROT_NONE fault here";
  Observed o = RunProbe(SamplerKind::kProtNone, /*write=*/false);
  ExpectExactCoverage(o, true, AccessKind::kRead);
  EXPECT_EQ(o.stats.unattributed, 0u);
}

// On any kernel: every page a vCPU only reads, on anonymous memory, is seen
// with that vCPU as a read, and every page it writes as a write.
TEST_F(SamplerTest, EvictFaultsSeeEveryReadAndWriteWithItsVcpuOnAnonymousMemory) {
  Observed reads = RunProbe(SamplerKind::kEvict, /*write=*/false);
  ExpectExactCoverage(reads, true, AccessKind::kRead);
  EXPECT_EQ(reads.stats.unattributed, 0u);
  ExpectExactCoverage(RunProbe(SamplerKind::kEvict, /*write=*/true), true, AccessKind::kWrite);
}

TEST_F(SamplerTest, DirtyRingSeesEveryWriteWithItsVcpu) {
  ExpectExactCoverage(RunProbe(SamplerKind::kRing, /*write=*/true), true, AccessKind::kWrite);
}

TEST_F(SamplerTest, DirtyLogSeesEveryWrite) {
  ExpectExactCoverage(RunProbe(SamplerKind::kDirtyLog, /*write=*/true), false, AccessKind::kWrite);
}

TEST_F(SamplerTest, WriteSamplersDoNotSeeReads) {
  for (SamplerKind kind :
       {SamplerKind::kWriteProtect, SamplerKind::kRing, SamplerKind::kDirtyLog}) {
    Observed o = RunProbe(kind, /*write=*/false);
    ASSERT_EQ(o.outcome.end, RunEnd::kCompleted);
    for (const AccessSample& s : o.samples) {
      EXPECT_LT(s.gfn, abi::kHeapStart / 4096) << "a read was reported as a write";
    }
  }
}

// The VMM's GDT and page tables are written with their accessed (and, for
// leaves, dirty) bits set, so the CPU never writes them while the guest
// first-touches its memory: a write sampler sees no write there. (A write
// the page walker makes to a write-protected table page is what the NUMA
// lab's emulated nested paging loops on: docs/numa-lab.md.)
TEST_F(SamplerTest, TheCpuNeverWritesTheVmmsTables) {
  Observed o = RunProbe(SamplerKind::kRing, /*write=*/true);
  ASSERT_EQ(o.outcome.end, RunEnd::kCompleted) << o.outcome.message;
  ASSERT_GT(o.samples.size(), 2 * kPages);
  for (const AccessSample& s : o.samples) {
    EXPECT_NE(s.gfn, abi::kGdtAddress / 4096) << "the GDT was written";
    EXPECT_FALSE(s.gfn >= abi::kPageTableBase / 4096 && s.gfn < abi::kPageTableLimit / 4096)
        << "the page tables were written: gfn 0x" << std::hex << s.gfn;
  }
}

// The AnonHugePages of the mapping that holds `address`, in KiB (-1: no
// such mapping).
long AnonHugeKbOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto a = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = a >= lo && a < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::stol(line.substr(14));
    }
  }
  return -1;
}

// Transparent hugepages stay whole under write-protect probes at the
// default scan: a probe is a whole 2 MiB page, protected and lifted as one.
// Protecting part of one would split its mapping into 4 KiB entries for
// good, and the guest would lose its 2 MiB translations wherever the
// sweep had been.
TEST_F(SamplerTest, WriteProtectProbesKeepTransparentHugePagesWhole) {
  RunOptions options;
  options.vm.vcpus = kVcpus;
  options.vm.memory_bytes = 64ull << 20;
  options.vm.echo_console = false;
  options.vm.backing = Backing::kThp;
  options.vm.payload_args = absl::StrCat("pages=", kPages, " write=1 seconds=2");
  options.sampling.sampler = SamplerKind::kWriteProtect;
  options.sampling.sampler_chosen = true;
  ASSERT_TRUE(PrepareSampling(options).ok());
  ASSERT_TRUE(NormalizeVmConfig(options.vm).ok());
  absl::StatusOr<ElfPayload> payload = ReadElfPayload(testing::PayloadPath("probe_touch"));
  ASSERT_TRUE(payload.ok()) << payload.status();
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(options.vm, *payload, nullptr);
  ASSERT_TRUE(vm.ok()) << vm.status();
  // All of RAM first-touched, as a guest that has run a while has it.
  const GuestRegion& ram = (*vm)->memory().regions()[0];
  volatile uint8_t* bytes = ram.host();
  for (uint64_t at = abi::kHeapStart; at < ram.bytes; at += 4096) bytes[at] = bytes[at];
  const long before = AnonHugeKbOf(ram.host());
  if (before < 8192) GTEST_SKIP() << "this host gave the guest no transparent hugepages";
  absl::StatusOr<std::unique_ptr<AccessSampler>> sampler = CreateSampler(options.sampling, **vm);
  ASSERT_TRUE(sampler.ok()) << sampler.status();
  ScanConfig scan = ScanConfigOf(options);
  scan.period = absl::Milliseconds(100);
  std::vector<AccessSample> samples;
  absl::Mutex mu;
  SamplingLoop loop(**sampler, scan, [&](const AccessBatch& batch) {
    absl::MutexLock lock(&mu);
    samples.insert(samples.end(), batch.begin(), batch.end());
    return PeriodOutcome{};
  });
  ASSERT_TRUE(loop.Start().ok());
  const RunOutcome outcome = (*vm)->Run();
  loop.Stop();
  ASSERT_EQ(outcome.end, RunEnd::kCompleted) << outcome.message;
  EXPECT_GT((*sampler)->stats().pages_armed, 0u);
  EXPECT_GE(AnonHugeKbOf(ram.host()), before) << "probes split transparent hugepages";
  for (const AccessSample& s : samples) EXPECT_EQ(s.gfn % 512, 0u) << "a sample of part of one";
}

// Pages in the window are re-armed every period: a page touched throughout
// the run is reported again in later windows (minor and write-protect
// hinting faults alike; only the probes fault, not all of RAM).
TEST_F(SamplerTest, HintWindowsRearmEachPeriod) {
  for (SamplerKind kind : {SamplerKind::kHint, SamplerKind::kWriteProtect, SamplerKind::kEvict,
                           SamplerKind::kProtNone}) {
    if (kind == SamplerKind::kProtNone && !KvmNamesFaultingPages()) continue;
    Observed o = RunProbe(kind, /*write=*/true);
    std::map<uint64_t, int> times;
    for (const AccessSample& s : o.samples) times[s.gfn]++;
    EXPECT_GE(times[FirstGfnOf(0)], 5) << SamplerKindName(kind);
    EXPECT_GE(o.stats.windows, 10u) << SamplerKindName(kind);
  }
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// hugetlbfs backing: hinting faults work at 2 MiB granularity.
TEST(HugetlbSamplerTest, HintFaultsReportHugePages) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  testing::HugePageReservation reservation(16);
  if (!reservation.ok()) GTEST_SKIP() << "cannot reserve 16 huge pages here";
  testing::ProcessResult r = testing::RunNumavm({"run",
                                                 "--payload",
                                                 "numa02",
                                                 "--vcpus",
                                                 "2",
                                                 "--memory",
                                                 "32M",
                                                 "--backing",
                                                 "hugetlb",
                                                 "--sampler",
                                                 "hint",
                                                 "--scan-window",
                                                 "32M",
                                                 "--scan-period",
                                                 "50ms",
                                                 "--report=json",
                                                 "--quiet-console",
                                                 "--",
                                                 "size=8M",
                                                 "seconds=1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backing"], "hugetlb");
  // 8 MiB of heap is 4 huge pages: a few samples per window, not thousands.
  uint64_t samples = j["sampling"]["samples"];
  uint64_t windows = j["sampling"]["windows"];
  EXPECT_GT(samples, 0u);
  EXPECT_LE(samples, (windows + 1) * 16);
  EXPECT_EQ(j["results"]["bytes"]["sum"].get<uint64_t>() > 0, true);
}

// Sampling can start and stop, again and again, while the vCPUs run, and
// the guest's data stays intact.
TEST(SamplerLifecycleTest, StartsAndStopsWhileVcpusRun) {
  if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
  for (SamplerKind kind : {SamplerKind::kHint, SamplerKind::kWriteProtect, SamplerKind::kEvict,
                           SamplerKind::kProtNone, SamplerKind::kRing, SamplerKind::kDirtyLog}) {
    if (kind == SamplerKind::kProtNone && !KvmNamesFaultingPages()) continue;
    RunOptions options;
    if (kind == SamplerKind::kWriteProtect || kind == SamplerKind::kEvict ||
        kind == SamplerKind::kProtNone) {
      options.vm.backing = Backing::kAnon;
    }
    options.vm.vcpus = 2;
    options.vm.memory_bytes = 32ull << 20;
    options.vm.echo_console = false;
    options.vm.payload_args = "size=2M seconds=3";
    options.sampling.sampler = kind;
    options.sampling.sampler_chosen = true;
    options.sampling.window_bytes = 32ull << 20;
    ASSERT_TRUE(PrepareSampling(options).ok());
    ASSERT_TRUE(NormalizeVmConfig(options.vm).ok());
    absl::StatusOr<ElfPayload> payload = ReadElfPayload(testing::PayloadPath("verify"));
    ASSERT_TRUE(payload.ok());
    auto vm = VirtualMachine::Create(options.vm, *payload, nullptr);
    ASSERT_TRUE(vm.ok()) << vm.status();
    RunOutcome outcome;
    std::thread runner([&] { outcome = (*vm)->Run(); });
    uint64_t samples = 0;
    for (int cycle = 0; cycle < 4; ++cycle) {
      absl::SleepFor(absl::Milliseconds(200));
      auto sampler = CreateSampler(options.sampling, **vm);
      ASSERT_TRUE(sampler.ok()) << sampler.status();
      ScanConfig scan = ScanConfigOf(options);
      scan.period = absl::Milliseconds(20);
      SamplingLoop loop(**sampler, scan, nullptr);
      ASSERT_TRUE(loop.Start().ok());
      absl::SleepFor(absl::Milliseconds(300));
      loop.Stop();
      EXPECT_TRUE(loop.status().ok()) << loop.status();
      samples += (*sampler)->stats().samples;
      (*vm)->SetDirtyRingFullHandler(nullptr);
    }
    runner.join();
    EXPECT_EQ(outcome.end, RunEnd::kCompleted) << SamplerKindName(kind) << ": " << outcome.message;
    EXPECT_EQ(outcome.record.SumResult("mismatches"), 0u) << SamplerKindName(kind);
    EXPECT_GT(samples, 0u) << SamplerKindName(kind);
  }
}

}  // namespace
}  // namespace numavm
