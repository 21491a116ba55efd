#include "balancer/policy/scan_gate.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(ScanGate, IdleVmsAreNotScanned) {
  EXPECT_FALSE(ShouldScan(absl::Milliseconds(1), absl::Seconds(1)));
  EXPECT_FALSE(ShouldScan(absl::ZeroDuration(), absl::Seconds(1)));
  EXPECT_TRUE(ShouldScan(absl::Milliseconds(200), absl::Seconds(1)));
  EXPECT_TRUE(ShouldScan(absl::Seconds(2), absl::Seconds(1)));  // two busy vCPUs
  EXPECT_FALSE(ShouldScan(absl::Milliseconds(200), absl::Seconds(1), {.idle_fraction = 0.5}));
}

}  // namespace
}  // namespace numavm
