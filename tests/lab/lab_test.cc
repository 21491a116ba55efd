// The short NUMA lab run CI can afford (label lab): a 2-node kernel under
// QEMU, numa02 on 4 vCPUs with its first touch on node 0 (a cpuset, widened
// once it is done), with nothing balancing, with numavm, and with the
// kernel's own balancing. Each balancer must have worked - by its own
// counters - and no ratio between them is asserted: speed under TCG is not
// a result.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "tests/lab/lab_results.h"

namespace numavm::lab {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// One scripts/lab.sh run with `args`, in a directory of its own.
struct LabOutput {
  std::string dir, log, err;  // lab-2node.log and lab.sh's stderr
  int rc = -1;
};

LabOutput RunLab(const std::string& args) {
  char pattern[] = "/tmp/numavm-lab-XXXXXX";
  LabOutput o;
  o.dir = mkdtemp(pattern);
  const std::string cmd = absl::StrCat(NUMAVM_SOURCE_DIR, "/scripts/lab.sh ", args, " --out ",
                                       o.dir, " > ", o.dir, "/stdout 2> ", o.dir, "/stderr");
  o.rc = std::system(cmd.c_str());
  o.log = ReadFile(o.dir + "/lab-2node.log");
  o.err = ReadFile(o.dir + "/stderr");
  return o;
}

// Why a lab run cannot say anything here, or "" when it can.
std::string Unavailable(const LabOutput& o) {
  if (o.rc != 0 && o.log.empty() && o.err.find("cannot resolve") != std::string::npos) {
    return "no Debian kernel package reachable: " + o.err;
  }
  return "";
}

bool HaveQemu() { return std::system("command -v qemu-system-x86_64 >/dev/null 2>&1") == 0; }

TEST(Lab, NumavmAndTheKernelEachBalanceNuma02OnARealTwoNodeKernel) {
  if (!HaveQemu()) GTEST_SKIP() << "qemu-system-x86_64 is not installed (scripts/install-deps.sh)";
  // A small VM (64 MiB, 16 MiB working set) so that CI can afford it; the
  // lab retries a run the lab itself broke (scripts/lab.sh) once, within a
  // deadline under ctest's timeout (tests/CMakeLists.txt): a lab that hangs
  // ends with its log, its runs lab failures.
  const LabOutput lab = RunLab(
      "--nodes 2 --workloads numa02 --modes off,numavm,kernel --seconds 30 --memory 64M "
      "--working-set 16M --mem-per-node 512M --interval 2 --no-verify --deadline 1200");
  if (const std::string why = Unavailable(lab); !why.empty()) GTEST_SKIP() << why;
  const std::string& log = lab.log;
  const std::string& err = lab.err;
  const int rc = lab.rc;
  ASSERT_EQ(rc, 0) << err;
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 3u) << log;
  for (const LabRun& r : runs) {
    // Twice broken by the lab itself (docs/numa-lab.md): a lab failure, not
    // a result either way.
    if (!r.report.is_object()) {
      GTEST_SKIP() << r.mode << ": a lab failure twice, or the lab's deadline passed\n" << err;
    }
  }
  // By mode: a run the lab broke is retried in a later boot, so the log's
  // order is not the plan's.
  auto by_mode = [&runs](const std::string& mode) -> const LabRun* {
    for (const LabRun& r : runs) {
      if (r.mode == mode) return &r;
    }
    return nullptr;
  };
  for (const char* mode : {"off", "numavm", "kernel"}) {
    ASSERT_NE(by_mode(mode), nullptr) << mode << "\n" << log;
  }
  const LabRun& off = *by_mode("off");
  const LabRun& on = *by_mode("numavm");
  const LabRun& kernel = *by_mode("kernel");
  for (const LabRun* r : {&off, &on, &kernel}) {
    EXPECT_EQ(r->nodes, 2);
    EXPECT_EQ(r->exit_code, 0) << r->mode;
    EXPECT_FALSE(r->report["placement_series"].empty()) << r->mode << ": placement over time";
  }
  // Nothing balances: first touch on node 0 (the cpuset) leaves it all there.
  const nlohmann::json& off_memory = off.report["memory_per_node"]["bytes"];
  EXPECT_GT(off_memory.value("0", uint64_t{0}), 8u << 20) << off.report["memory_per_node"];
  EXPECT_EQ(off_memory.value("1", uint64_t{0}), 0u) << off.report["memory_per_node"];
  // pgmigrate_success counts every migration of the lab kernel, compaction's
  // within a node too: OFF's own figure is that the kernel's NUMA balancing
  // migrated nothing (and node 1 holds none of the guest's memory, above).
  // The lab boots with the kernel's balancing off, so nothing was marked.
  EXPECT_EQ(off.counters.at("numa_pte_updates"), 0u) << log;
  EXPECT_EQ(off.kernel_numa_migrated, 0u) << log;
  // numavm balanced: it moved pages, and memory is on both nodes.
  EXPECT_GT(on.report["balance"]["pages_migrated"].get<uint64_t>(), 0u) << log;
  EXPECT_GT(on.pages_migrated, 0u);
  EXPECT_GT(on.report["memory_per_node"]["bytes"].value("1", uint64_t{0}), 1u << 20);
  // The kernel's balancing was a real peer: it scanned the guest's memory
  // (its own PTE updates) and migrated pages on its own.
  ASSERT_TRUE(kernel.counters.count("numa_pte_updates")) << log;
  EXPECT_GT(kernel.counters.at("numa_pte_updates"), 0u) << "the kernel did not scan";
  EXPECT_GT(kernel.counters.at("numa_hint_faults"), 0u);
  EXPECT_GT(kernel.kernel_numa_migrated, 0u) << "the kernel migrated nothing";
  std::filesystem::remove_all(lab.dir);
}

// A Linux guest on numavm's own VMM (`numavm run --kernel`), booted in the
// lab's nested KVM: the lab's kernel with a busybox, numactl and numabench
// initramfs (scripts/guest-initramfs.sh), one guest cell and vCPU per lab
// node. The guest must see the cells as its NUMA nodes (ACPI SRAT and
// SLIT), with the right CPUs and distances, run numabench's numa02 to the
// end with a thread on each CPU, and its poweroff must end the VM with
// exit 0.
TEST(Lab, ALinuxGuestSeesItsCellsAsNumaNodesAndPowersOff) {
  if (!HaveQemu()) GTEST_SKIP() << "qemu-system-x86_64 is not installed (scripts/install-deps.sh)";
  const LabOutput lab = RunLab(
      "--nodes 2 --workloads linux --modes boot --seconds 30 --mem-per-node 1G --no-verify "
      "--deadline 900");
  if (const std::string why = Unavailable(lab); !why.empty()) GTEST_SKIP() << why;
  const std::string& log = lab.log;
  const std::string& err = lab.err;
  const int rc = lab.rc;
  ASSERT_EQ(rc, 0) << err;
  if (log.find("LAB-END linux boot") == std::string::npos) {
    GTEST_SKIP() << "the lab failed twice (docs/numa-lab.md)\n" << err;
  }
  for (const char* line : {
           "LINUX: GUEST-NODES 0-1",
           "LINUX: GUEST-NUMACTL available: 2 nodes (0-1)",
           "LINUX: GUEST-NUMACTL node 0 cpus: 0",
           "LINUX: GUEST-NUMACTL node 1 cpus: 1",
           "LINUX: GUEST-NUMACTL   0:  10  20",
           "LINUX: GUEST-NUMACTL   1:  20  10",
           "LINUX: NUMABENCH numa02 threads 2 size 67108864 seconds 5.0",
           "LINUX: NUMABENCH numa02 process 0 thread 0 cpu ",
           "LINUX: NUMABENCH numa02 process 0 thread 1 cpu ",
           "LINUX: NUMABENCH numa02 process 0 threads 2 elapsed ",
           "LINUX: GUEST-NUMABENCH-EXIT 0",
           "LINUX: GUEST-POWEROFF",
           "LAB-LINUX linux boot rc=0",
       }) {
    EXPECT_NE(log.find(line), std::string::npos) << line << "\n" << log;
  }
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 1u) << log;
  ASSERT_TRUE(runs[0].report.is_object()) << log;
  EXPECT_EQ(runs[0].report["message"], "the guest powered off");
  EXPECT_EQ(runs[0].report["end"], "completed");
  EXPECT_EQ(runs[0].exit_code, 0);
  std::filesystem::remove_all(lab.dir);
}

}  // namespace
}  // namespace numavm::lab
