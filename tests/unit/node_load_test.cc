// How busy each node is with work other than the VM's own vCPUs, from
// /proc/stat and the vCPU threads' CPU time: fed fixed texts.
#include "balancer/actuation/node_load.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

// Two nodes of two CPUs each.
Topology TwoNodes() {
  Topology t;
  t.nodes = {NumaNode{0, {0, 1}, 0, 0}, NumaNode{1, {2, 3}, 0, 0}};
  t.distance = {{10, 20}, {20, 10}};
  return t;
}

// /proc/stat with each CPU's busy (user) and idle ticks.
std::string Stat(const std::vector<std::pair<uint64_t, uint64_t>>& cpus) {
  std::string out = "cpu  1 2 3 4 5 6 7 8 0 0\n";
  for (size_t i = 0; i < cpus.size(); ++i) {
    absl::StrAppend(&out, "cpu", i, " ", cpus[i].first, " 0 0 ", cpus[i].second, " 0 0 0 0 0 0\n");
  }
  return out + "intr 1 2 3\nctxt 4\n";
}

TEST(NodeLoad, ParsesEachCpusTicks) {
  std::optional<std::vector<CpuTicks>> t =
      ParsePerCpuStat("cpu  9 9 9 9\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu2 10 0 0 30\nintr 5\n");
  ASSERT_TRUE(t.has_value());
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].busy, 1u + 2 + 3 + 6 + 7 + 8);  // guest time is in user already
  EXPECT_EQ((*t)[0].idle, 4u + 5);
  EXPECT_EQ((*t)[1].busy + (*t)[1].idle, 0u) << "an offline CPU reads zero";
  EXPECT_EQ((*t)[2].busy, 10u);
  EXPECT_FALSE(ParsePerCpuStat("cpu0 1 2 x 4\n").has_value());
  EXPECT_FALSE(ParsePerCpuStat("cpu99999999 1 2 3 4\n").has_value());
  EXPECT_FALSE(ParsePerCpuStat("cpu0 1 2\n").has_value());
}

// Node 0's CPUs are busy; half of it is the VM's one vCPU there. Node 1
// is half busy with nobody's vCPU: all of that is other work.
TEST(NodeLoad, OtherWorkIsTheBusyTimeLessTheVcpus) {
  const Topology t = TwoNodes();
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  const uint64_t second = static_cast<uint64_t>(hz);
  std::string stat = Stat({{0, 0}, {0, 0}, {0, 0}, {0, 0}});
  NodeLoad load(t, [&] { return stat; });
  EXPECT_TRUE(load.Sample({{"vcpu0", absl::ZeroDuration(), 0}}).empty())
      << "the first call has nothing to compare";
  // One second later: CPUs 0 and 1 fully busy, CPU 2 half, CPU 3 idle; the
  // vCPU ran the whole second on CPU 1. A consumer seen for the first time
  // (vcpu1) is not subtracted: its CPU time so far is not this second's.
  stat = Stat({{second, 0}, {second, 0}, {second / 2, second / 2}, {0, second}});
  std::vector<double> busy =
      load.Sample({{"vcpu0", absl::Seconds(1), 1}, {"vcpu1", absl::Seconds(100), 2}});
  ASSERT_EQ(busy.size(), 2u);
  EXPECT_NEAR(busy[0], 1.0, 0.02);
  EXPECT_NEAR(busy[1], 0.5, 0.02);
  // A second in which only the vCPUs ran (vcpu0 on CPU 0, vcpu1 half a
  // second on CPU 2): no other work, so the figures halve (each older
  // second counts half as much).
  stat = Stat({{second * 2, 0}, {second, second}, {second, second}, {0, second * 2}});
  busy = load.Sample({{"vcpu0", absl::Seconds(2), 0}, {"vcpu1", absl::Seconds(100.5), 2}});
  EXPECT_NEAR(busy[0], 0.5, 0.02);
  EXPECT_NEAR(busy[1], 0.25, 0.02);
}

// Read at most once an interval: calls in between give the last figures and
// read neither /proc/stat nor the VM's threads.
TEST(NodeLoad, ReadsAtMostOnceAnInterval) {
  const Topology t = TwoNodes();
  const uint64_t second = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  std::string stat = Stat({{0, 0}, {0, 0}, {0, 0}, {0, 0}});
  int stat_reads = 0, own_reads = 0;
  NodeLoad load(t, [&] {
    ++stat_reads;
    return stat;
  });
  auto own = [&] {
    ++own_reads;
    return std::vector<OwnCpuUse>{};
  };
  const absl::Duration every = absl::Seconds(5);
  EXPECT_TRUE(load.SampleEvery(every, absl::Seconds(100), own).empty());
  stat = Stat({{second, 0}, {0, second}, {0, second}, {0, second}});
  EXPECT_TRUE(load.SampleEvery(every, absl::Seconds(101), own).empty())
      << "one second later: the first reading's (none) again";
  EXPECT_TRUE(load.SampleEvery(every, absl::Seconds(104.9), own).empty());
  EXPECT_EQ(stat_reads, 1);
  EXPECT_EQ(own_reads, 1);
  std::vector<double> busy = load.SampleEvery(every, absl::Seconds(105), own);
  ASSERT_EQ(busy.size(), 2u) << "five seconds on: read again";
  EXPECT_NEAR(busy[0], 1.0, 0.02);
  EXPECT_NEAR(busy[1], 0.0, 0.02);
  stat = Stat({{second * 2, 0}, {0, second * 2}, {0, second * 2}, {0, second * 2}});
  EXPECT_EQ(load.SampleEvery(every, absl::Seconds(106), own), busy);
  EXPECT_EQ(stat_reads, 2);
  EXPECT_EQ(own_reads, 2);
  // A clock that went back (another clock's reading) reads at once.
  EXPECT_EQ(load.SampleEvery(every, absl::Seconds(50), own).size(), 2u);
  EXPECT_EQ(stat_reads, 3);
}

TEST(NodeLoad, AnUnreadableStatGivesNothing) {
  const Topology t = TwoNodes();
  NodeLoad load(t, [] { return std::string("garbage\n"); });
  EXPECT_TRUE(load.Sample({}).empty());
  EXPECT_TRUE(load.Sample({}).empty());
}

// This host's own files: the figures exist and are within its CPUs.
TEST(NodeLoad, ReadsThisHost) {
  Topology t;
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  NumaNode node{0, {}, 0, 0};
  for (int c = 0; c < cpus; ++c) node.cpus.push_back(c);
  t.nodes = {node};
  t.distance = {{10}};
  NodeLoad load(t);
  load.Sample(ProcessCpuUse(getpid()));
  usleep(50 * 1000);
  const std::vector<double> busy = load.Sample(ProcessCpuUse(getpid()));
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_GE(busy[0], 0.0);
  EXPECT_LE(busy[0], static_cast<double>(cpus));
}

}  // namespace
}  // namespace numavm

namespace numavm {
namespace {

// Every thread of a process, as a libvirt domain's QEMU process is counted:
// here this test's own process, whose main thread has used CPU time.
TEST(NodeLoad, ProcessCpuUseListsEveryThread) {
  // The second thread lives until the listing is done (a sleep of fixed
  // length could end first on a loaded machine).
  std::promise<void> listed;
  std::thread helper([done = listed.get_future()] { done.wait(); });
  // The kernel counts a thread's CPU time in clock ticks (10 ms or less):
  // a test process that has just started may not have used one yet.
  volatile uint64_t spin = 0;
  while (ThreadCpuTime() < absl::Milliseconds(50)) spin = spin + 1;
  const std::vector<OwnCpuUse> use = ProcessCpuUse(getpid());
  listed.set_value();
  helper.join();
  ASSERT_GE(use.size(), 2u);
  bool found = false;
  for (const OwnCpuUse& u : use) {
    if (u.key != absl::StrCat(getpid(), "/", gettid())) continue;
    found = true;
    EXPECT_GT(u.cpu_time, absl::ZeroDuration());
    EXPECT_GE(u.last_cpu, 0);
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(ProcessCpuUse(getpid(), "/nonexistent").empty()) << "a process that is gone";
}

}  // namespace
}  // namespace numavm
