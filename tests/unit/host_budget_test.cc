// The host-wide migration budget: two openers (as two numavm processes
// would) share one bucket; a corrupt file is reset, not trusted.
#include "balancer/actuation/host_budget.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "balancer/actuation/rate_limiter.h"

namespace numavm {
namespace {

class HostBudgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/numavm-budget-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

constexpr uint64_t kRate = 1ull << 30;  // a second's worth is the burst

TEST_F(HostBudgetTest, TwoOpenersShareOneBucket) {
  auto a = HostBudget::Open(dir_, kRate);
  auto b = HostBudget::Open(dir_, kRate);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*a)->Take(kRate), kRate) << "a new budget starts full";
  // What a took, b cannot have (refill in the microseconds between is
  // far below a megabyte at 1 GiB/s... per millisecond it is 1 MiB).
  EXPECT_LT((*b)->Take(kRate), 16ull << 20);
  (*a)->GiveBack(512ull << 20);
  EXPECT_GE((*b)->Take(512ull << 20), 512ull << 20);
  EXPECT_EQ(std::filesystem::status(dir_ + "/migration-budget").permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

TEST_F(HostBudgetTest, ARateLimiterLinkedToItIsBoundByBoth) {
  auto host = HostBudget::Open(dir_, 8ull << 20);
  ASSERT_TRUE(host.ok());
  RateLimiter vm1(1ull << 30, 1ull << 30, absl::ZeroDuration());
  RateLimiter vm2(1ull << 30, 1ull << 30, absl::ZeroDuration());
  vm1.set_host(host->get());
  vm2.set_host(host->get());
  // Each VM alone would be allowed 1 GiB; together they get the host's 8 MiB.
  const uint64_t got1 = vm1.Take(1ull << 30, absl::ZeroDuration());
  const uint64_t got2 = vm2.Take(1ull << 30, absl::ZeroDuration());
  EXPECT_GE(got1, 8ull << 20);
  EXPECT_LT(got1 + got2, 9ull << 20);
  // A VM's unused grant goes back to the host for the other.
  vm1.GiveBack(4ull << 20);
  EXPECT_GE(vm2.Take(4ull << 20, absl::ZeroDuration()), 4ull << 20);
}

TEST_F(HostBudgetTest, AFileThatIsNotABudgetIsReset) {
  std::ofstream(dir_ + "/migration-budget") << "garbage that is long enough to be read as a budget";
  auto b = HostBudget::Open(dir_, kRate);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)->Take(kRate), kRate);
}

// A budget whose refill time was tampered with (negative: the refill would
// overflow; in the future) is reset to a full bucket, not trusted.
TEST_F(HostBudgetTest, ATamperedRefillTimeIsReset) {
  struct Raw {
    uint64_t magic, rate;
    double tokens;
    int64_t last_ns;
  };
  for (int64_t last_ns : {INT64_MIN, int64_t{-1}, INT64_MAX}) {
    Raw raw{0x6e756d6162756431ull, kRate, 0.0, last_ns};
    std::ofstream(dir_ + "/migration-budget", std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(&raw), sizeof(raw));
    auto b = HostBudget::Open(dir_, kRate);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)->Take(kRate), kRate) << "last_ns " << last_ns;
    EXPECT_EQ((*b)->Problem(), "");
  }
}

// On a full filesystem every update of the budget fails: the host-wide
// limit is then not in force, and the budget says so (for the report).
TEST_F(HostBudgetTest, AFullFilesystemIsReportedNotSilent) {
  if (mount("numavm-full", dir_.c_str(), "tmpfs", 0, "size=4k,mode=0700") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root): " << std::strerror(errno);
  }
  {
    std::ofstream fill(dir_ + "/fill", std::ios::binary);
    const std::string page(4096, 'x');
    fill.write(page.data(), page.size());
  }
  {
    auto b = HostBudget::Open(dir_, kRate);
    if (b.ok()) {
      (void)(*b)->Take(4096);
      EXPECT_NE((*b)->Problem().find("host migration budget not in force"), std::string::npos)
          << (*b)->Problem();
    } else {
      // Or the file cannot even be created: a clear error, not a silent one.
      EXPECT_NE(b.status().message().find("migration-budget"), std::string::npos) << b.status();
    }
  }
  ASSERT_EQ(umount(dir_.c_str()), 0) << std::strerror(errno);
}

TEST_F(HostBudgetTest, ARuntimeDirOpenToOthersIsRefused) {
  ASSERT_EQ(chmod(dir_.c_str(), 0777), 0);
  auto b = HostBudget::Open(dir_, kRate);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("has mode 0777"), std::string::npos) << b.status();
}

TEST_F(HostBudgetTest, AnUnusableDirectoryIsAClearError) {
  auto b = HostBudget::Open("/proc/numavm-cannot-be-here", kRate);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(std::string(b.status().message()).find("/proc/numavm-cannot-be-here"),
            std::string::npos)
      << b.status();
}

}  // namespace
}  // namespace numavm
