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
  absl::Status Arm(const ScanPlan& plan) override {
    Spin(kArmCost);
    ++arms;
    ranges += plan.probes.size();
    return absl::OkStatus();
  }
  void Stop() override {}
  SamplerStats stats() const override { return {}; }

  static constexpr absl::Duration kArmCost = absl::Milliseconds(20);
  std::atomic<int> arms{0};
  std::atomic<uint64_t> ranges{0};  // in the plans armed: one call each
};

// Runs a loop over `sampler` whose decisions each burn `decide` of CPU and
// return `outcome(n)` for the n-th (from 1), until four were made.
template <typename Outcome>
SamplingLoop::HostSplit RunFourDecisions(CostlyArmSampler& sampler, absl::Duration decide,
                                         Outcome outcome, int& decisions_made) {
  std::atomic<int> decisions{0};
  ScanConfig config;
  config.period = absl::Milliseconds(50);
  SamplingLoop loop(sampler, config, [&](const AccessBatch&) {
    Spin(decide);
    return outcome(++decisions);
  });
  EXPECT_TRUE(loop.Start().ok());
  while (decisions < 4) absl::SleepFor(absl::Milliseconds(10));
  loop.Stop();
  decisions_made = decisions.load();
  return loop.host_split();
}

TEST(SamplingLoopTest, ReportsWhereItsCpuWentArmingCollectingAndDeciding) {
  CostlyArmSampler sampler;
  constexpr absl::Duration kDecideCost = absl::Milliseconds(5);
  int decisions = 0;
  const SamplingLoop::HostSplit split = RunFourDecisions(
      sampler, kDecideCost, [](int) { return PeriodOutcome{}; }, decisions);
  // Every arm and every decision is counted, under its own name.
  EXPECT_GE(split.arm, CostlyArmSampler::kArmCost * sampler.arms.load());
  EXPECT_GE(split.decide, kDecideCost * decisions);
  // Collecting one sample is nearly free; it is not charged with the rest.
  EXPECT_LT(split.collect, CostlyArmSampler::kArmCost);
  EXPECT_EQ(split.migrate, absl::ZeroDuration());
  EXPECT_EQ(split.view, absl::ZeroDuration()) << "the consumer named no view calls";
  EXPECT_GE(sampler.arms.load(), 4);
}

// The part of deciding that the balancer says went to its placement view's
// calls is reported apart, within deciding, never more than it.
TEST(SamplingLoopTest, TheViewsShareOfDecidingIsReportedApart) {
  CostlyArmSampler sampler;
  constexpr absl::Duration kDecideCost = absl::Milliseconds(6);
  int decisions = 0;
  const SamplingLoop::HostSplit split = RunFourDecisions(
      sampler, kDecideCost,
      [&](int n) {
        PeriodOutcome o;
        // The first claims more than it spent: clipped to its deciding.
        o.view_cpu_time = n == 1 ? absl::Seconds(1) : kDecideCost / 2;
        return o;
      },
      decisions);
  EXPECT_GE(split.view, kDecideCost / 2 * (decisions - 1));
  EXPECT_LE(split.view, split.decide);
}

// The arming calls the plans held are counted, so that the report can give
// the run's mean host time a call (`sampling.host_seconds_per_call_mean`,
// what `numavm simulate --arm-cost` takes) besides the smoothed figure.
TEST(SamplingLoopTest, CountsTheArmingCallsOfEveryPlan) {
  CostlyArmSampler sampler;
  std::atomic<int> decisions{0};
  ScanConfig config;
  config.period = absl::Milliseconds(50);
  SamplingLoop loop(sampler, config, [&](const AccessBatch&) {
    ++decisions;
    return PeriodOutcome{};
  });
  ASSERT_TRUE(loop.Start().ok());
  while (decisions < 4) absl::SleepFor(absl::Milliseconds(10));
  loop.Stop();
  EXPECT_GT(sampler.ranges.load(), 0u);
  EXPECT_EQ(loop.arm_calls(), sampler.ranges.load());
}

}  // namespace
}  // namespace numavm
