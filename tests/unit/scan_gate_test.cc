#include "balancer/policy/scan_gate.h"

#include <gtest/gtest.h>

#include "balancer/policy/scan_period.h"

namespace numavm {
namespace {

TEST(ScanGate, IdleVmsAreNotScanned) {
  EXPECT_FALSE(ShouldScan(absl::Milliseconds(1), absl::Seconds(1)));
  EXPECT_FALSE(ShouldScan(absl::ZeroDuration(), absl::Seconds(1)));
  EXPECT_TRUE(ShouldScan(absl::Milliseconds(200), absl::Seconds(1)));
  EXPECT_TRUE(ShouldScan(absl::Seconds(2), absl::Seconds(1)));  // two busy vCPUs
  EXPECT_FALSE(ShouldScan(absl::Milliseconds(200), absl::Seconds(1), {.idle_fraction = 0.5}));
}

TEST(ScanGate, SmallVmsAreNotWorthScanning) {
  EXPECT_FALSE(WorthScanning(16ull << 20));
  EXPECT_FALSE(WorthScanning((32ull << 20) - 4096));
  EXPECT_TRUE(WorthScanning(32ull << 20));
  EXPECT_TRUE(WorthScanning(1ull << 40));
}

ScanPeriodConfig OneToSixteen() { return {absl::Seconds(1), absl::Seconds(16), 0.7}; }

TEST(ScanPeriod, BacksOffWhileSettledUpToTheMaximum) {
  ScanPeriodController c(OneToSixteen());
  const PeriodOutcome settled{100, 95, 0, 0};
  EXPECT_EQ(c.Next(settled), absl::Seconds(2));
  EXPECT_EQ(c.Next(settled), absl::Seconds(4));
  EXPECT_EQ(c.Next(settled), absl::Seconds(8));
  EXPECT_EQ(c.Next(settled), absl::Seconds(16));
  EXPECT_EQ(c.Next(settled), absl::Seconds(16));
  EXPECT_EQ(c.changes(), 4u);
}

TEST(ScanPeriod, SpeedsUpBelowSeventyPercentLocal) {
  ScanPeriodController c(OneToSixteen());
  for (int i = 0; i < 4; ++i) c.Next({0, 0, 0, 0});  // nothing seen: backs off
  ASSERT_EQ(c.period(), absl::Seconds(16));
  EXPECT_EQ(c.Next({100, 50, 10, 0}), absl::Seconds(8));
  EXPECT_EQ(c.Next({100, 69, 0, 0}), absl::Seconds(4));
  // Local enough but still migrating: hold.
  EXPECT_EQ(c.Next({100, 80, 10, 0}), absl::Seconds(4));
  EXPECT_EQ(c.Next({100, 60, 0, 0}), absl::Seconds(2));
  EXPECT_EQ(c.Next({100, 60, 0, 0}), absl::Seconds(1));
  EXPECT_EQ(c.Next({100, 60, 0, 0}), absl::Seconds(1)) << "never below the minimum";
}

TEST(ScanPeriod, ACollapseOfLocalityGoesToTheMinimumAtOnce) {
  ScanPeriodController c(OneToSixteen());
  for (int i = 0; i < 4; ++i) c.Next({100, 100, 0, 0});
  ASSERT_EQ(c.period(), absl::Seconds(16));
  // The phase changed: 10% local.
  EXPECT_EQ(c.Next({100, 10, 0, 0}), absl::Seconds(1));
}

TEST(ScanPeriod, AVcpuMoveResetsToTheMinimum) {
  ScanPeriodController c(OneToSixteen());
  for (int i = 0; i < 4; ++i) c.Next({100, 100, 0, 0});
  ASSERT_EQ(c.period(), absl::Seconds(16));
  EXPECT_EQ(c.Next({100, 100, 0, 1}), absl::Seconds(1));
}

TEST(ScanPeriod, AFixedRangeNeverChanges) {
  ScanPeriodController c({absl::Seconds(1), absl::Seconds(1), 0.7});
  c.Next({100, 100, 0, 0});
  c.Next({100, 0, 0, 0});
  EXPECT_EQ(c.period(), absl::Seconds(1));
  EXPECT_EQ(c.changes(), 0u);
}

}  // namespace
}  // namespace numavm
