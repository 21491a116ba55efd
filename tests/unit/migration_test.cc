#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <thread>
#include <vector>

#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/rate_limiter.h"
#include "balancer/actuation/spare_cpus.h"

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
  static constexpr uint64_t kBytes = 32 << 20;
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

// A clock the test moves: every read advances it by `step` (any thread).
struct SteppedClock {
  std::atomic<int64_t> now_ms{0};
  std::atomic<int64_t> step_ms{0};
  absl::Duration operator()() { return absl::Milliseconds(now_ms += step_ms.load()); }
};

TEST(WorkersFor, OneThreadUnlessOneWouldTakeLongerThanTheTarget) {
  const absl::Duration ms = absl::Milliseconds(1);
  EXPECT_EQ(WorkersFor(16, 10 * ms, 250 * ms, 4), 1);  // 160 ms: one is enough
  EXPECT_EQ(WorkersFor(16, 0 * ms, 250 * ms, 4), 1);   // not measured yet
  EXPECT_EQ(WorkersFor(16, 20 * ms, 250 * ms, 4), 2);  // 320 ms: two
  EXPECT_EQ(WorkersFor(16, 50 * ms, 250 * ms, 4), 4);  // 800 ms: four, at most
  EXPECT_EQ(WorkersFor(16, 50 * ms, 250 * ms, 1), 1);  // one allowed
  EXPECT_EQ(WorkersFor(3, 500 * ms, 250 * ms, 8), 3);  // one a batch, at most
  EXPECT_EQ(WorkersFor(1, 900 * ms, 250 * ms, 8), 1);
  EXPECT_EQ(WorkersFor(16, 1 * ms, 0 * ms, 4), 4);  // no time left alone: all
}

// Once a period's first batch showed that one thread would be short of
// time, the next call's batches are shared by the threads allowed: every
// page moves, the outcome adds up over the threads, and the report counts
// the shared call.
TEST_F(MigratorTest, ThreadsShareACallsBatchesWhenOneWouldBeShortOfTime) {
  PageMigrator migrator(0, 4096, nullptr);
  migrator.set_workers(4);
  SteppedClock clock;
  migrator.set_max_time(absl::Seconds(1), [&clock] { return clock(); });
  clock.step_ms = 100;  // the first batch "takes" 200 ms: its two reads
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(0, 512), absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 512u);
  EXPECT_EQ(migrator.times().parallel_calls, 0u);
  clock.step_ms = 0;  // from now on time stands still: no bound is reached
  std::vector<PageMove> moves = MovesTo(0, 8 * 512);
  out = migrator.Migrate(moves, absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 8u * 512);
  EXPECT_EQ(out->bytes_moved, 8u * 512 * 4096);
  EXPECT_EQ(out->deferred, 0u);
  EXPECT_TRUE(out->retry.empty());
  EXPECT_EQ(migrator.times().parallel_calls, 1u);
  EXPECT_EQ(migrator.times().most_workers, 4);
  EXPECT_EQ(migrator.times().batches, 9u);
  EXPECT_EQ(migrator.times().pages, 9u * 512);
}

// Shared or not, no batch starts once the period's time is spent: the
// moves not attempted are the tail, handed back to be retried.
TEST_F(MigratorTest, SharedBatchesStopAtThePeriodsBound) {
  PageMigrator migrator(0, 4096, nullptr);
  migrator.set_workers(4);
  SteppedClock clock;
  migrator.set_max_time(absl::Seconds(1), [&clock] { return clock(); });
  clock.step_ms = 100;
  ASSERT_TRUE(migrator.Migrate(MovesTo(0, 512), absl::Seconds(1)).ok());
  clock.step_ms = 2000;  // every read now lies past the bound
  const std::vector<PageMove> moves = MovesTo(0, 8 * 512);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(moves, absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(migrator.times().parallel_calls, 1u);
  EXPECT_EQ(out->moved, 0u);
  EXPECT_EQ(out->deferred, moves.size());
  ASSERT_EQ(out->retry.size(), moves.size());
  EXPECT_EQ(out->retry.front().address, moves.front().address);
  EXPECT_EQ(out->retry.back().address, moves.back().address);
}

// Extra threads run only on CPUs the host had idle: at most one more per
// idle CPU, and none while that is not known.
TEST_F(MigratorTest, ExtraThreadsOnlyForTheHostsIdleCpus) {
  for (const auto& [spare, threads] :
       std::vector<std::pair<double, int>>{{-1, 1}, {0.4, 1}, {1.7, 2}, {2.0, 3}, {12.0, 4}}) {
    PageMigrator migrator(0, 4096, nullptr);
    migrator.set_workers(4);
    migrator.set_spare_cpus([spare = spare] { return spare; });
    SteppedClock clock;
    migrator.set_max_time(absl::Seconds(1), [&clock] { return clock(); });
    clock.step_ms = 100;  // a batch "takes" 200 ms: four threads wanted
    ASSERT_TRUE(migrator.Migrate(MovesTo(0, 512), absl::Seconds(1)).ok());
    clock.step_ms = 0;
    absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(0, 8 * 512), absl::Seconds(1));
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(out->moved, 8u * 512) << spare;
    EXPECT_EQ(migrator.times().most_workers, threads) << spare << " idle CPUs";
    EXPECT_EQ(migrator.times().parallel_calls, threads > 1 ? 1u : 0u) << spare;
  }
}

TEST(SpareCpus, IdleTicksOverAllTicksTimesTheCpus) {
  EXPECT_FALSE(ParseProcStat("intr 1 2 3\n").has_value());
  EXPECT_FALSE(ParseProcStat("cpu  1 2 x 4\n").has_value());
  // user nice system idle iowait irq softirq steal guest guest_nice
  std::optional<HostCpuTimes> t = ParseProcStat(
      "cpu  100 0 50 800 50 0 0 0 7 0\ncpu0 50 0 25 400 25 0 0 0 0 0\n"
      "cpu1 50 0 25 400 25 0 0 0 0 0\nintr 5\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->idle, 850u);
  EXPECT_EQ(t->busy, 150u);  // guest time is in user already
  EXPECT_EQ(t->cpus, 2);
  std::vector<std::string> texts = {
      "cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 0\ncpu1 0\n",
      // 400 ticks more: 100 idle, 300 busy -> a quarter of 2 CPUs idle
      "cpu  350 0 100 900 50 0 0 0 0 0\ncpu0 0\ncpu1 0\n",
      "cpu  350 0 100 900 50 0 0 0 0 0\ncpu0 0\ncpu1 0\n",  // no tick: unknown
      "garbage",
  };
  size_t next = 0;
  SpareCpus spare([&] { return texts[next++]; });
  EXPECT_EQ(spare.Sample(), -1);  // nothing to compare with yet
  EXPECT_DOUBLE_EQ(spare.Sample(), 0.5);
  EXPECT_EQ(spare.Sample(), -1);
  EXPECT_EQ(spare.Sample(), -1);
  // The host's own file: a share of its CPUs, once ticks have passed.
  SpareCpus host;
  EXPECT_EQ(host.Sample(), -1);
  absl::SleepFor(absl::Milliseconds(200));
  const double idle = host.Sample();
  EXPECT_GE(idle, 0);
  EXPECT_LE(idle, static_cast<double>(std::thread::hardware_concurrency()));
}

TEST_F(MigratorTest, AnOfflineNodeIsAnErrorNotACrash) {
  PageMigrator migrator(0, 4096, nullptr);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(MovesTo(63, 4), absl::ZeroDuration());
  EXPECT_FALSE(out.ok());
}

}  // namespace
}  // namespace numavm
