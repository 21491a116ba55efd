#include "balancer/libvirt/kernel_numa_faults.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "balancer/libvirt/qemu_process.h"

namespace numavm {
namespace {

// The tail of /proc/PID/task/TID/sched of a vCPU thread on a 2-node host
// with kernel.numa_balancing on (6.12's layout), and the same lines as
// kernels before 6.x wrote them, with commas.
constexpr char kSched612[] =
    "mm->numa_scan_seq                            :                   14\n"
    "numa_pages_migrated                          :                 2048\n"
    "numa_preferred_nid                           :                    1\n"
    "total_numa_faults                            :                 3172\n"
    "current_node=1, numa_group_id=0\n"
    "numa_faults node=0 task_private=100 task_shared=20 group_private=0 group_shared=0\n"
    "numa_faults node=1 task_private=2900 task_shared=152 group_private=0 group_shared=0\n";
constexpr char kSched61[] =
    "numa_faults node=0 task_private=7, task_shared=1, group_private=0, group_shared=0\n"
    "numa_faults node=1 task_private=0, task_shared=0, group_private=0, group_shared=0\n";

TEST(KernelNumaFaults, ASchedFileGivesTheThreadsFaultsByNode) {
  EXPECT_EQ(ParseNumaFaults(kSched612), (NodeFaults{{0, 120}, {1, 3052}}));
  EXPECT_EQ(ParseNumaFaults(kSched61), (NodeFaults{{0, 8}})) << "nodes without faults left out";
  // The kernel's balancing never counted this thread (or the kernel has no
  // such lines): no evidence, not "all remote".
  EXPECT_TRUE(ParseNumaFaults("numa_faults node=0 task_private=0 task_shared=0 group_private=0 "
                              "group_shared=0\n")
                  .empty());
  EXPECT_TRUE(ParseNumaFaults("se.exec_start : 1.0\nnr_switches : 3\n").empty());
  EXPECT_TRUE(ParseNumaFaults("numa_faults node=x task_private=5\n").empty());
}

TEST(KernelNumaFaults, LocalityIsTheShareOfFaultsOnTheNodeEachVcpuRunsOn) {
  const std::map<int, NodeFaults> faults = {
      {0, {{0, 90}, {1, 10}}},  // vCPU 0: mostly node 0
      {1, {{0, 25}, {1, 75}}},  // vCPU 1: mostly node 1
      {2, {{1, 500}}},          // vCPU 2: no node known, left out
  };
  std::optional<double> right = KernelFaultLocality(faults, {{0, 0}, {1, 1}});
  ASSERT_TRUE(right.has_value());
  EXPECT_DOUBLE_EQ(*right, (90.0 + 75) / 200);
  std::optional<double> swapped = KernelFaultLocality(faults, {{0, 1}, {1, 0}});
  ASSERT_TRUE(swapped.has_value());
  EXPECT_DOUBLE_EQ(*swapped, (10.0 + 25) / 200);
  EXPECT_FALSE(KernelFaultLocality({}, {{0, 0}}).has_value());
  EXPECT_FALSE(KernelFaultLocality(faults, {}).has_value());
}

// A QEMU's vCPU threads by their names, and their counts, under a fake /proc.
TEST(KernelNumaFaults, TheVcpuThreadsOfAQemuProcessAreReadByName) {
  char pattern[] = "/tmp/numavm-proc-XXXXXX";
  const std::string root = mkdtemp(pattern);
  auto thread = [&](int tid, const std::string& comm, const std::string& sched) {
    const std::string dir = absl::StrCat(root, "/500/task/", tid);
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/comm") << comm << "\n";
    if (!sched.empty()) std::ofstream(dir + "/sched") << sched;
  };
  thread(500, "qemu-system-x86", "");
  thread(501, "CPU 0/KVM", kSched612);
  thread(502, "CPU 1/KVM", kSched61);
  thread(503, "CPU 12/TCG", "");
  thread(504, "IO mon_iothread", "");
  thread(505, "CPU x/KVM", "");
  const std::map<int, pid_t> threads = QemuVcpuThreads(500, root);
  EXPECT_EQ(threads, (std::map<int, pid_t>{{0, 501}, {1, 502}, {12, 503}}));
  const std::map<int, NodeFaults> faults = ReadVcpuNumaFaults(500, threads, root);
  EXPECT_EQ(faults, (std::map<int, NodeFaults>{{0, {{0, 120}, {1, 3052}}}, {1, {{0, 8}}}}));
  EXPECT_TRUE(QemuVcpuThreads(600, root).empty()) << "a process that ended";
  std::filesystem::remove_all(root);
}

// This host: a thread's own sched file, with the kernel's balancing off
// (as on the development machine, one node), counts nothing - no access
// locality is made up from counts that stand still.
TEST(KernelNumaFaults, WithTheKernelsBalancingOffNothingIsCounted) {
  std::ifstream sysctl("/proc/sys/kernel/numa_balancing");
  int mode = 0;
  if (sysctl && (sysctl >> mode) && (mode & 1) != 0) GTEST_SKIP() << "the kernel's balancing is on";
  const std::map<int, NodeFaults> faults =
      ReadVcpuNumaFaults(getpid(), {{0, static_cast<pid_t>(gettid())}});
  if (faults.empty()) GTEST_SKIP() << "no /proc/PID/task/TID/sched (no CONFIG_SCHED_DEBUG)";
  EXPECT_TRUE(faults.at(0).empty());
  EXPECT_FALSE(KernelFaultLocality(faults, {{0, 0}}).has_value());
}

}  // namespace
}  // namespace numavm
