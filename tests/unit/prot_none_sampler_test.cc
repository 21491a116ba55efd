// The PROT_NONE sampler's bookkeeping on real memory, without a VM: what it
// arms is inaccessible, a fault gives back only its page and is a sample
// with its vCPU, an emulation failure gives back everything, the cap gives
// back the oldest, and Stop leaves guest memory as it was.
#include "balancer/sampling/prot_none_sampler.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/move_fence.h"
#include "tests/support/proc_maps.h"

namespace numavm {
namespace {

constexpr uint64_t kFirstGfn = 0x800;  // the heap's first page, as in a payload
constexpr uint64_t kPages = 16384;     // 64 MiB

using testing::ProtectionAt;

class ProtNoneSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* m = ::mmap(nullptr, kPages * kGuestPageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    host_ = static_cast<uint8_t*>(m);
    GuestRamRegion r;
    r.gpa = kFirstGfn * kGuestPageBytes;
    r.bytes = kPages * kGuestPageBytes;
    r.host = host_;
    auto s = ProtNoneSampler::Create({r}, 2, nullptr, &fence_);
    ASSERT_TRUE(s.ok()) << s.status();
    sampler_ = *std::move(s);
    ASSERT_TRUE(sampler_->Start().ok());
  }
  void TearDown() override {
    sampler_.reset();
    if (host_ != nullptr) ::munmap(host_, kPages * kGuestPageBytes);
  }
  uint8_t* Page(uint64_t i) const { return host_ + i * kGuestPageBytes; }
  static uint64_t Gpa(uint64_t i) { return (kFirstGfn + i) * kGuestPageBytes; }

  MoveFence fence_;
  uint8_t* host_ = nullptr;
  std::unique_ptr<ProtNoneSampler> sampler_;
};

TEST_F(ProtNoneSamplerTest, AFaultGivesBackItsPageOnlyAndIsASampleOfItsVcpu) {
  ScanPlan plan;
  plan.probes = {{kFirstGfn + 10, 4}, {kFirstGfn + 600, 1}};
  ASSERT_TRUE(sampler_->Arm(plan).ok());
  for (uint64_t i : {10, 11, 12, 13, 600}) EXPECT_EQ(ProtectionAt(Page(i)), "---p") << i;
  EXPECT_EQ(ProtectionAt(Page(14)), "rw-p");
  EXPECT_EQ(sampler_->stats().pages_armed, 5u);

  const uint64_t before = fence_.sequence();
  EXPECT_TRUE(sampler_->OnFault(1, Gpa(12) + 123));
  EXPECT_EQ(ProtectionAt(Page(12)), "rw-p");
  for (uint64_t i : {10, 11, 13, 600}) EXPECT_EQ(ProtectionAt(Page(i)), "---p") << i;
  // A vCPU that faulted on it meanwhile is let back in (an even step: no
  // move window).
  EXPECT_EQ(fence_.sequence(), before + 2);
  // Given back already, and memory never armed: not the sampler's.
  EXPECT_FALSE(sampler_->OnFault(0, Gpa(12)));
  EXPECT_FALSE(sampler_->OnFault(0, Gpa(5000)));

  AccessBatch batch;
  ASSERT_TRUE(sampler_->Collect(batch).ok());
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].gfn, kFirstGfn + 12);
  EXPECT_EQ(batch[0].vcpu, 1);
  const SamplerStats stats = sampler_->stats();
  EXPECT_EQ(stats.samples, 1u);
  EXPECT_EQ(stats.per_vcpu[1], 1u);
  EXPECT_EQ(stats.unattributed, 0u);

  // The next period re-arms what was given back, and leaves the rest.
  ASSERT_TRUE(sampler_->Arm(plan).ok());
  EXPECT_EQ(ProtectionAt(Page(12)), "---p");
  EXPECT_EQ(sampler_->stats().pages_armed, 6u);
}

TEST_F(ProtNoneSamplerTest, AnEmulationFailureGivesEveryProbeBack) {
  ScanPlan plan;
  plan.probes = {{kFirstGfn + 1, 2}, {kFirstGfn + 700, 3}};
  ASSERT_TRUE(sampler_->Arm(plan).ok());
  EXPECT_TRUE(sampler_->OnFault(0, std::nullopt));
  for (uint64_t i : {1, 2, 700, 701, 702}) EXPECT_EQ(ProtectionAt(Page(i)), "rw-p") << i;
  // Nothing armed: the next one is not the sampler's (the fence decides).
  EXPECT_FALSE(sampler_->OnFault(0, std::nullopt));
  EXPECT_EQ(sampler_->stats().samples, 0u);
}

TEST_F(ProtNoneSamplerTest, PastTheCapTheOldestUntouchedProbesGoBack) {
  ScanPlan old_plan;
  for (uint64_t i = 0; i < ProtNoneSampler::kMaxArmedRuns; ++i) {
    old_plan.probes.push_back({kFirstGfn + 2 * i, 1});  // apart: one run each
  }
  ASSERT_TRUE(sampler_->Arm(old_plan).ok());
  EXPECT_EQ(sampler_->stats().pages_armed, ProtNoneSampler::kMaxArmedRuns);
  EXPECT_EQ(ProtectionAt(Page(0)), "---p");
  ScanPlan next;
  next.probes = {{kFirstGfn + kPages - 1, 1}};
  ASSERT_TRUE(sampler_->Arm(next).ok());
  EXPECT_EQ(ProtectionAt(Page(kPages - 1)), "---p");
  // One of the first period's went back to make room: the oldest (ties:
  // the lowest page), and only it.
  EXPECT_EQ(ProtectionAt(Page(0)), "rw-p");
  EXPECT_EQ(ProtectionAt(Page(2)), "---p");
  EXPECT_EQ(ProtectionAt(Page(2 * (ProtNoneSampler::kMaxArmedRuns - 1))), "---p");
}

TEST_F(ProtNoneSamplerTest, StopGivesEverythingBack) {
  ScanPlan plan;
  plan.probes = {{kFirstGfn, kPages}};  // a window: all of it, one run
  ASSERT_TRUE(sampler_->Arm(plan).ok());
  EXPECT_TRUE(sampler_->OnFault(0, Gpa(100)));  // splits the run
  EXPECT_EQ(ProtectionAt(Page(99)), "---p");
  EXPECT_EQ(ProtectionAt(Page(101)), "---p");
  sampler_->Stop();
  for (uint64_t i : {0, 99, 100, 101, 8000}) EXPECT_EQ(ProtectionAt(Page(i)), "rw-p") << i;
  Page(99)[0] = 1;  // and it is usable
  // Stopped: arming does nothing.
  ASSERT_TRUE(sampler_->Arm(plan).ok());
  EXPECT_EQ(ProtectionAt(Page(0)), "rw-p");
}

}  // namespace
}  // namespace numavm
