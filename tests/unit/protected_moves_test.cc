// ProtectedMoves and its fence without a VM (the VM's side is in
// tests/kvm/protected_moves_test.cc): a batch's runs are inaccessible
// between Stage and Unstage and exactly as before after, with the fence up
// meanwhile; memory it must keep is never taken away.
#include "balancer/actuation/protected_moves.h"

#include <gtest/gtest.h>
#include <numaif.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "balancer/actuation/page_migrator.h"
#include "tests/support/proc_maps.h"

namespace numavm {
namespace {

constexpr uint64_t kPages = 64;

// The protection /proc/self/maps gives the mapping holding `at` ("rw-p").
using testing::ProtectionAt;

class ProtectedMovesUnitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (absl::Status s = CheckMovesUnderProtNone(); !s.ok()) GTEST_SKIP() << s.message();
    void* p = mmap(nullptr, kPages * kGuestPageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    mem_ = static_cast<uint8_t*>(p);
    for (uint64_t i = 0; i < kPages * kGuestPageBytes; ++i) mem_[i] = static_cast<uint8_t>(i * 7);
    GuestRamRegion r;
    r.bytes = kPages * kGuestPageBytes;
    r.host = mem_;
    ram_ = {r};
  }
  void TearDown() override {
    if (mem_ != nullptr) munmap(mem_, kPages * kGuestPageBytes);
  }
  std::vector<void*> Pages(uint64_t first, uint64_t count) const {
    std::vector<void*> out;
    for (uint64_t i = first; i < first + count; ++i) out.push_back(mem_ + i * kGuestPageBytes);
    return out;
  }
  uint8_t* mem_ = nullptr;
  std::vector<GuestRamRegion> ram_;
  MoveFence fence_;
};

TEST_F(ProtectedMovesUnitTest, ARunIsInaccessibleWithTheFenceUpAndWholeAfter) {
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> p = ProtectedMoves::Create(ram_, &fence_);
  ASSERT_TRUE(p.ok()) << p.status();
  // Two runs: pages 8-15 and 20-23.
  std::vector<void*> batch = Pages(8, 8);
  for (void* q : Pages(20, 4)) batch.push_back(q);
  StagedPages staged = (*p)->Stage(batch);
  EXPECT_TRUE(staged.in_place);
  EXPECT_TRUE(staged.at.empty()) << "the pages move where they are";
  EXPECT_EQ(fence_.sequence() % 2, 1u) << "the fence is up";
  EXPECT_EQ(ProtectionAt(mem_ + 8 * kGuestPageBytes), "---p");
  EXPECT_EQ(ProtectionAt(mem_ + 21 * kGuestPageBytes), "---p");
  EXPECT_EQ(ProtectionAt(mem_ + 16 * kGuestPageBytes), "rw-p") << "between the runs";
  // move_pages sees the pages under PROT_NONE.
  std::vector<int> where(batch.size(), -1);
  ASSERT_EQ(move_pages(0, batch.size(), batch.data(), nullptr, where.data(), 0), 0);
  for (int w : where) EXPECT_GE(w, 0);
  (*p)->Unstage();
  EXPECT_EQ(fence_.sequence() % 2, 0u) << "the fence is down";
  EXPECT_EQ(ProtectionAt(mem_ + 8 * kGuestPageBytes), "rw-p");
  EXPECT_EQ(ProtectionAt(mem_ + 21 * kGuestPageBytes), "rw-p");
  for (uint64_t i = 0; i < kPages * kGuestPageBytes; ++i) {
    ASSERT_EQ(mem_[i], static_cast<uint8_t>(i * 7)) << i;
  }
  mem_[8 * kGuestPageBytes] = 1;  // writable again
  EXPECT_EQ((*p)->windows(), 1u);
  EXPECT_EQ((*p)->runs(), 2u);
}

TEST_F(ProtectedMovesUnitTest, ABatchWithKeptMemoryMovesAsItIs) {
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> p = ProtectedMoves::Create(ram_, &fence_);
  ASSERT_TRUE(p.ok()) << p.status();
  (*p)->set_kept({{mem_, 4 * kGuestPageBytes}});
  StagedPages staged = (*p)->Stage(Pages(2, 4));
  EXPECT_FALSE(staged.in_place);
  EXPECT_EQ(fence_.sequence(), 0u) << "never raised";
  EXPECT_EQ(ProtectionAt(mem_ + 4 * kGuestPageBytes), "rw-p");
  (*p)->Unstage();  // harmless
  EXPECT_EQ(fence_.sequence(), 0u);
  // Outside the ends of the regions, too.
  StagedPages outside = (*p)->Stage({mem_ + kPages * kGuestPageBytes});
  EXPECT_FALSE(outside.in_place);
  EXPECT_EQ((*p)->windows(), 0u);
}

TEST_F(ProtectedMovesUnitTest, TheMigratorGivesEveryRunBack) {
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> p = ProtectedMoves::Create(ram_, &fence_);
  ASSERT_TRUE(p.ok()) << p.status();
  PageMigrator migrator(0, kGuestPageBytes, nullptr);
  migrator.set_staging(p->get());
  std::vector<int> node(1, -1);
  void* first = mem_;
  ASSERT_EQ(move_pages(0, 1, &first, nullptr, node.data(), 0), 0);
  std::vector<PageMove> moves;
  for (void* q : Pages(0, kPages)) moves.push_back({reinterpret_cast<uintptr_t>(q), node[0]});
  absl::StatusOr<MigrationOutcome> o = migrator.Migrate(moves, absl::ZeroDuration());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->moved, kPages) << "every page found under PROT_NONE, on its node";
  EXPECT_EQ(o->moved_unmapped, 0u);
  EXPECT_EQ(ProtectionAt(mem_), "rw-p");
  EXPECT_EQ(fence_.sequence() % 2, 0u);
  EXPECT_EQ((*p)->windows(), 1u);
}

TEST(MoveFenceTest, AFaultIsRetriedOnlyWhereAWindowWasOpenSinceTheEntry) {
  MoveFence fence;
  const uint64_t idle = fence.sequence();
  EXPECT_FALSE(fence.RetryAfterFault(idle)) << "no window: a real fault";
  fence.Raise();
  const uint64_t during = fence.sequence();
  fence.Lower();
  EXPECT_TRUE(fence.RetryAfterFault(idle)) << "a window opened since";
  EXPECT_TRUE(fence.RetryAfterFault(during)) << "entered while one was open";
  EXPECT_FALSE(fence.RetryAfterFault(fence.sequence()));
  EXPECT_EQ(fence.retries(), 2u);
}

// A run a mover failed to give back would fault for ever: with no window to
// explain a fault, the fence gives all memory back once, and again only
// after another window.
TEST(MoveFenceTest, AFaultNoWindowExplainsRepairsOncePerWindow) {
  MoveFence fence;
  int repairs = 0;
  fence.set_repair([&] { ++repairs; });
  EXPECT_TRUE(fence.RetryAfterFault(fence.sequence()));
  EXPECT_FALSE(fence.RetryAfterFault(fence.sequence())) << "repaired already: a real fault";
  fence.Raise();
  fence.Lower();
  EXPECT_TRUE(fence.RetryAfterFault(fence.sequence()));
  EXPECT_EQ(repairs, 2);
  EXPECT_EQ(fence.repairs(), 2u);
  EXPECT_EQ(fence.retries(), 0u);
}

// KVM retries a nested page fault whenever an invalidation completed while
// it was handled, and each moved page is one: back-to-back windows starved
// a vCPU in the lab. The next window waits a quarter of the last one, at
// least 1 ms, and a vCPU or host access is never held back by that wait.
TEST(MoveFenceTest, WindowsAreSeparatedByAQuietGap) {
  using std::chrono::milliseconds;
  using std::chrono::steady_clock;
  EXPECT_EQ(MoveFence::QuietGap(steady_clock::duration::zero()), milliseconds(1));
  EXPECT_EQ(MoveFence::QuietGap(milliseconds(40)), milliseconds(10));
  MoveFence fence;
  fence.Raise();
  absl::SleepFor(absl::Milliseconds(200));
  // Read before Lower: the gap counts from inside it, so it has passed by
  // `lowered` + 50 ms whatever the scheduler does (an exact lower bound).
  // The gap (>= 50 ms) dwarfs the few calls between Lower and Raise, so
  // the mover does wait in it.
  const steady_clock::time_point lowered = steady_clock::now();
  fence.Lower();
  {
    MoveFence::Access access(&fence);  // not held back by the gap
    EXPECT_EQ(fence.sequence(), 2u);
  }
  EXPECT_TRUE(fence.RetryAfterFault(1));
  fence.Raise();
  EXPECT_GE(steady_clock::now() - lowered, milliseconds(50));
  EXPECT_GT(fence.gap_waited(), steady_clock::duration::zero());
  fence.Lower();
}

// A raised fence holds host access back until it is lowered; a mover
// waiting to raise it does not hold back an access that has begun.
TEST(MoveFenceTest, AccessWaitsForARaisedFence) {
  MoveFence fence;
  fence.Raise();
  std::atomic<bool> in{false};
  std::thread reader([&] {
    MoveFence::Access access(&fence);
    in.store(true);
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(in.load());
  fence.Lower();
  reader.join();
  EXPECT_TRUE(in.load());
  std::thread mover;
  {
    MoveFence::Access first(&fence);
    mover = std::thread([&] {
      fence.Raise();
      fence.Lower();
    });
    absl::SleepFor(absl::Milliseconds(20));
    MoveFence::Access second(&fence);  // not blocked by the waiting mover
    EXPECT_EQ(fence.sequence(), 2u) << "the mover waits for both";
  }
  mover.join();
  EXPECT_EQ(fence.sequence(), 4u);
}

// Two raisers - a page mover and the PROT_NONE sampler arming - never
// hold the fence at once: the second waits for the first's window (a
// window's sequence stays odd while it is open).
TEST(MoveFenceTest, OneRaiserAtATime) {
  MoveFence fence;
  fence.Raise();
  std::atomic<bool> second_in{false};
  std::thread second([&] {
    fence.Raise();
    second_in.store(true);
    fence.Lower();
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(second_in.load()) << "raised while the first window was open";
  EXPECT_EQ(fence.sequence(), 1u);
  fence.Lower();
  second.join();
  EXPECT_TRUE(second_in.load());
  EXPECT_EQ(fence.sequence(), 4u);
}

// A probe given back (the PROT_NONE sampler) lets a vCPU that faulted
// before it back in, as a window does, without opening one.
TEST(MoveFenceTest, AGiveBackLetsAnEarlierFaultRetry) {
  MoveFence fence;
  const uint64_t before = fence.sequence();
  fence.GivenBack();
  EXPECT_EQ(fence.sequence() % 2, 0u) << "no window is open";
  EXPECT_TRUE(fence.RetryAfterFault(before));
  EXPECT_FALSE(fence.RetryAfterFault(fence.sequence()));
}

}  // namespace
}  // namespace numavm
