// A fault taken by a KVM worker thread goes to the one vCPU thread that is
// blocked (balancer/sampling/blocked_vcpu.h): real threads, real /proc, and
// a real hinting-fault sampler whose faulting thread is not a vCPU.
#include "balancer/sampling/blocked_vcpu.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "balancer/sampling/hint_fault_sampler.h"

namespace numavm {
namespace {

pid_t Tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// Threads that either spin (running, or runnable when preempted: 'R') or
// sleep on a condition variable ('S') until released.
class Threads {
 public:
  explicit Threads(const std::vector<bool>& sleeps) : tids_(sleeps.size()) {
    for (size_t i = 0; i < sleeps.size(); ++i) {
      threads_.emplace_back([this, i, sleep = sleeps[i]] {
        tids_[i] = Tid();
        if (sleep) {
          std::unique_lock<std::mutex> lock(mu_);
          cv_.wait(lock, [this] { return done_.load(); });
        } else {
          while (!done_.load()) {
          }
        }
      });
    }
    // Until every thread has its tid and every sleeper is asleep.
    for (size_t i = 0; i < sleeps.size(); ++i) {
      while (tids_[i].load() == 0 || (sleeps[i] && ThreadState(tids_[i]) != 'S')) {
        std::this_thread::yield();
      }
    }
  }
  ~Threads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  std::vector<pid_t> tids() const {
    std::vector<pid_t> out;
    for (const auto& t : tids_) out.push_back(t.load());
    return out;
  }

 private:
  std::vector<std::atomic<pid_t>> tids_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> done_{false};
};

TEST(BlockedVcpu, AThreadThatRunsIsRunning) { EXPECT_EQ(ThreadState(Tid()), 'R'); }

TEST(BlockedVcpu, AThreadThatIsGoneHasNoState) {
  pid_t gone = 0;
  std::thread([&] { gone = Tid(); }).join();
  // join() returns once the thread has let go of its stack; the kernel may
  // still be ending it (state R in its exit path) for a moment, longer on a
  // loaded machine (seen once beside a build): wait until it is gone.
  for (int i = 0; i < 500 && ThreadState(gone) != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ThreadState(gone), 0);
  EXPECT_EQ(TheOneBlockedVcpu({gone}), -1);
}

TEST(BlockedVcpu, TheOneSleepingThreadIsNamed) {
  Threads threads({false, true, false});
  EXPECT_EQ(TheOneBlockedVcpu(threads.tids()), 1);
}

// Several asleep: the faulting page's cell names the one of them that is
// its - if only one of them is.
TEST(BlockedVcpu, TheCellDecidesBetweenSeveralSleepers) {
  Threads threads({true, false, true, true});
  EXPECT_EQ(TheOneBlockedVcpu(threads.tids(), {0, 1}), 0) << "cell of vCPUs 0-1";
  EXPECT_EQ(TheOneBlockedVcpu(threads.tids(), {2, 3}), -1) << "both of cell 2-3 sleep";
  EXPECT_EQ(TheOneBlockedVcpu(threads.tids(), {1}), -1) << "its vCPU runs";
}

// A guest with cells: a worker's fault nobody asleep explains goes to the
// page's cell's vCPUs in turn; a blocked vCPU still comes first; without
// cells there is no such fallback.
TEST(BlockedVcpu, WorkerFaultsNobodyExplainsGoToThePagesCell) {
  Threads running({false, false, false, false});
  WorkerFaultOwner owner({{100, {0, 1}}, {200, {2, 3}}});
  FaultOwner a = owner.Of(150, running.tids()), b = owner.Of(150, running.tids());
  EXPECT_TRUE(a.by_cell && b.by_cell);
  EXPECT_EQ(std::vector<int>({a.vcpu, b.vcpu}), std::vector<int>({2, 3})) << "in turn";
  EXPECT_EQ(owner.Of(10, running.tids()).vcpu / 2, 0) << "cell 0's";
  EXPECT_EQ(owner.Of(500, running.tids()).vcpu, -1) << "past every cell";
  WorkerFaultOwner one_cell({{200, {0, 1, 2, 3}}});
  EXPECT_EQ(one_cell.Of(150, running.tids()).vcpu, -1) << "one cell says nothing";
  Threads one_asleep({false, true, false, false});
  FaultOwner c = owner.Of(150, one_asleep.tids());
  EXPECT_EQ(c.vcpu, 1) << "the blocked vCPU, whatever the cell";
  EXPECT_FALSE(c.by_cell);
}

TEST(BlockedVcpu, NobodyIsNamedWhenSeveralOrNoneSleep) {
  {
    Threads threads({true, false, true});
    EXPECT_EQ(TheOneBlockedVcpu(threads.tids()), -1) << "two asleep: idle vCPUs sleep too";
  }
  {
    Threads threads({false, false});
    EXPECT_EQ(TheOneBlockedVcpu(threads.tids()), -1);
  }
}

// A hinting fault from a thread that is not a vCPU (KVM's async-page-fault
// worker) is given to the vCPU the sampler is told is blocked, and counted
// as inferred; without that, it stays unattributed.
TEST(BlockedVcpu, AHintingFaultFromAWorkerGoesToTheBlockedVcpu) {
  constexpr uint64_t kBytes = 4 * 4096;
  const int fd = ::memfd_create("blocked-vcpu-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, kBytes), 0);
  void* map = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* mem = static_cast<uint8_t*>(map);
  for (uint64_t i = 0; i < kBytes; i += 4096) mem[i] = 1;
  GuestRamRegion r;
  r.bytes = kBytes;
  r.host = mem;
  r.shared_file = true;
  r.fd = fd;
  for (bool told : {true, false}) {
    auto sampler = HintFaultSampler::Create(
        {r}, 2, [](pid_t) { return -1; }, [] { return absl::ZeroDuration(); });
    ASSERT_TRUE(sampler.ok()) << sampler.status();
    uint64_t asked = 99;
    if (told) {
      (*sampler)->set_blocked_vcpu([&asked](uint64_t gfn) {
        asked = gfn;
        return FaultOwner{1, false};
      });
    }
    if (absl::Status s = (*sampler)->Start(); !s.ok()) {
      GTEST_SKIP() << "userfaultfd minor faults on memfd are not available here: " << s;
    }
    ScanPlan plan;
    plan.probes = {{2, 1}};
    plan.regions = {{0, 4}};
    ASSERT_TRUE((*sampler)->Arm(plan).ok());
    std::thread([&] { mem[2 * 4096] = 7; }).join();  // the "worker" faults
    // The handler records the fault after it woke the toucher: wait for it.
    AccessBatch batch;
    for (int i = 0; i < 500 && batch.empty(); ++i) {
      ASSERT_TRUE((*sampler)->Collect(batch).ok());
      if (batch.empty()) ::usleep(10000);
    }
    ASSERT_EQ(batch.size(), 1u);
    EXPECT_EQ(batch[0].gfn, 2u);
    const SamplerStats stats = (*sampler)->stats();
    if (told) {
      EXPECT_EQ(batch[0].vcpu, 1);
      EXPECT_EQ(asked, 2u) << "asked with the faulting page";
      EXPECT_EQ(stats.inferred, 1u);
      EXPECT_EQ(stats.per_vcpu[1], 1u);
      EXPECT_EQ(stats.unattributed, 0u);
    } else {
      EXPECT_EQ(batch[0].vcpu, kUnknownVcpu);
      EXPECT_EQ(stats.inferred, 0u);
      EXPECT_EQ(stats.unattributed, 1u);
    }
    (*sampler)->Stop();
  }
  EXPECT_EQ(mem[2 * 4096], 7);
  ::munmap(map, kBytes);
  ::close(fd);
}

}  // namespace
}  // namespace numavm
