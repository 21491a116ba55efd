// The sampling loop's account of its own CPU: what arming, collecting and
// deciding cost is what a user reads in the report's
// `sampling.host_cpu_seconds` to see where the scan's budget went.
#include "balancer/sampling/sampling_loop.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "base/thread_cpu.h"
#include "gtest/gtest.h"

namespace numavm {
namespace {

// Burns this thread's CPU for `d`.
void Spin(absl::Duration d) {
  const absl::Duration until = ThreadCpuTime() + d;
  while (ThreadCpuTime() < until) {
  }
}

// A sampler whose Arm costs a known amount of CPU and whose Collect reports
// one sample.
class CostlyArmSampler final : public AccessSampler {
 public:
  absl::string_view name() const override { return "costly-arm"; }
  std::vector<GfnRange> Coverage() const override { return {{0, 4096}}; }
  absl::Status Start() override { return absl::OkStatus(); }
  absl::Status Collect(AccessBatch& out) override {
    out.push_back(AccessSample{.gfn = 1, .vcpu = 0});
    return absl::OkStatus();
  }
  absl::Status Arm(const ScanPlan&) override {
    Spin(kArmCost);
    ++arms;
    return absl::OkStatus();
  }
  void Stop() override {}
  SamplerStats stats() const override { return {}; }

  static constexpr absl::Duration kArmCost = absl::Milliseconds(20);
  std::atomic<int> arms{0};
};

TEST(SamplingLoopTest, ReportsWhereItsCpuWentArmingCollectingAndDeciding) {
  CostlyArmSampler sampler;
  constexpr absl::Duration kDecideCost = absl::Milliseconds(5);
  std::atomic<int> decisions{0};
  ScanConfig config;
  config.period = absl::Milliseconds(50);
  SamplingLoop loop(sampler, config, [&](const AccessBatch&) {
    Spin(kDecideCost);
    ++decisions;
    return PeriodOutcome{};
  });
  ASSERT_TRUE(loop.Start().ok());
  while (decisions < 4) absl::SleepFor(absl::Milliseconds(10));
  loop.Stop();
  const SamplingLoop::HostSplit split = loop.host_split();
  // Every arm and every decision is counted, under its own name.
  EXPECT_GE(split.arm, CostlyArmSampler::kArmCost * sampler.arms.load());
  EXPECT_GE(split.decide, kDecideCost * decisions.load());
  // Collecting one sample is nearly free; it is not charged with the rest.
  EXPECT_LT(split.collect, CostlyArmSampler::kArmCost);
  EXPECT_EQ(split.migrate, absl::ZeroDuration());
  EXPECT_GE(sampler.arms.load(), 4);
}

}  // namespace
}  // namespace numavm
