#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <thread>
#include <vector>

#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/rate_limiter.h"

namespace numavm {
namespace {

TEST(RateLimiter, HoldsTheRateAndTheBurst) {
  RateLimiter limiter(1000, 500, absl::ZeroDuration());
  EXPECT_EQ(limiter.Take(800, absl::ZeroDuration()), 500u);  // the burst
  EXPECT_EQ(limiter.Take(800, absl::ZeroDuration()), 0u);
  EXPECT_EQ(limiter.Take(800, absl::Milliseconds(100)), 100u);  // 1000/s for 0.1 s
  EXPECT_EQ(limiter.Available(absl::Seconds(10)), 500u);        // capped at the burst
  // Over a long run the average is the rate, whatever the request pattern.
  RateLimiter steady(4096 * 100, 4096 * 10, absl::ZeroDuration());
  uint64_t granted = 0;
  for (int ms = 0; ms <= 10000; ++ms) granted += steady.Take(4096 * 7, absl::Milliseconds(ms));
  EXPECT_NEAR(static_cast<double>(granted), 4096.0 * (100 * 10 + 10), 4096.0);
}

TEST(RateLimiter, GiveBackReturnsUnusedBudget) {
  RateLimiter limiter(0, 100, absl::ZeroDuration());
  EXPECT_EQ(limiter.Take(100, absl::ZeroDuration()), 100u);
  limiter.GiveBack(40);
  EXPECT_EQ(limiter.Available(absl::ZeroDuration()), 40u);
}

// One VM's limiter is shared by the balancer's thread and --migrate-churn's:
// two threads taking page by page at the same instants are granted, in
// all, exactly what one would be - never more (under TSan, also no race).
TEST(RateLimiter, TwoThreadsTakingAtOnceGetNoMoreThanTheBudget) {
  constexpr uint64_t kPage = 4096;
  RateLimiter limiter(kPage * 1000, kPage * 2000, absl::ZeroDuration());
  std::atomic<uint64_t> granted{0};
  auto take = [&] {
    for (int ms = 0; ms <= 100; ++ms) {
      while (uint64_t got = limiter.Take(kPage, absl::Milliseconds(ms))) granted += got;
    }
  };
  std::thread a(take), b(take);
  a.join();
  b.join();
  // The burst, then 1000 pages a second for 0.1 s.
  EXPECT_EQ(granted.load(), kPage * (2000 + 100));
}

class MigratorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    mem_ = static_cast<uint8_t*>(
        mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(mem_, MAP_FAILED);
    for (uint64_t off = 0; off < kBytes; off += 4096) mem_[off] = 1;
  }
  void TearDown() override { munmap(mem_, kBytes); }
  std::vector<PageMove> MovesTo(int node, size_t pages) {
    std::vector<PageMove> moves;
    for (size_t i = 0; i < pages; ++i) {
      moves.push_back({reinterpret_cast<uintptr_t>(mem_) + i * 4096, node});
    }
    return moves;
  }
  static constexpr uint64_t kBytes = 4 << 20;
  uint8_t* mem_ = nullptr;
};

TEST_F(MigratorTest, MovesToAnOnlineNodeInBatches) {
  PageMigrator migrator(0, 4096, nullptr);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(0, 1000), absl::ZeroDuration());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 1000u);  // node 0 exists on every host
  EXPECT_EQ(out->bytes_moved, 1000u * 4096);
  EXPECT_TRUE(out->retry.empty());
}

TEST_F(MigratorTest, TheRateLimitDefersTheRest) {
  RateLimiter limiter(0, 100 * 4096, absl::ZeroDuration());
  PageMigrator migrator(0, 4096, &limiter);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(0, 300), absl::ZeroDuration());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->moved, 100u);
  EXPECT_EQ(out->deferred, 200u);
  EXPECT_EQ(out->retry.size(), 200u);
}

TEST_F(MigratorTest, APeriodsTimeBoundDefersTheRestToTheNextPeriod) {
  // Every batch "takes" 100 ms; a period may take 250 ms: three batches
  // start (the third crosses the bound), the rest waits, and its share of
  // the rate limit is given back. The next period starts afresh.
  RateLimiter limiter(0, 4000 * 4096, absl::ZeroDuration());
  PageMigrator migrator(0, 4096, &limiter);
  absl::Duration fake;
  migrator.set_max_time(absl::Milliseconds(250), [&fake] {
    fake += absl::Milliseconds(100);  // read once before and once after each batch
    return fake;
  });
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(0, 1000), absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 1000u);  // two batches, 200 ms
  out = migrator.Migrate(MovesTo(0, 1000), absl::Seconds(1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->moved, 512u);  // a third batch (300 ms), then no more
  EXPECT_EQ(out->deferred, 488u);
  EXPECT_EQ(out->retry.size(), 488u);
  out = migrator.Migrate(MovesTo(0, 10), absl::Seconds(1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->moved, 0u);  // the period's time is spent
  EXPECT_EQ(out->deferred, 10u);
  // Only the pages that moved were charged.
  EXPECT_EQ(limiter.Available(absl::Seconds(1)), (4000u - 1512u) * 4096);
  out = migrator.Migrate(MovesTo(0, 10), absl::Seconds(2));  // the next period
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->moved, 10u);
}

TEST_F(MigratorTest, AnOfflineNodeIsAnErrorNotACrash) {
  PageMigrator migrator(0, 4096, nullptr);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(63, 4), absl::ZeroDuration());
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace numavm
