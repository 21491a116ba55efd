// The dirty ring's ring-full handling, on a ring in memory (no VM: the
// reset ioctl fails on fd -1 and is ignored, as a failed reset is).
#include "balancer/sampling/dirty_ring_sampler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace numavm {
namespace {

constexpr uint32_t kEntries = 16;

class RingFullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GuestRamRegion ram;
    ram.slot = 0;
    ram.bytes = 64 * kGuestPageBytes;
    absl::StatusOr<std::unique_ptr<DirtyRingSampler>> s = DirtyRingSampler::Create(
        -1, {ram}, {DirtyRingView{entries_.data(), kEntries}}, [] { return absl::ZeroDuration(); });
    ASSERT_TRUE(s.ok()) << s.status();
    sampler_ = *std::move(s);
  }
  int Marked() const {
    int n = 0;
    for (const kvm_dirty_gfn& e : entries_) n += (e.flags & KVM_DIRTY_GFN_F_RESET) != 0 ? 1 : 0;
    return n;
  }
  void Write(uint32_t i, uint64_t offset) {
    entries_[i].slot = 0;
    entries_[i].offset = offset;
    entries_[i].flags = KVM_DIRTY_GFN_F_DIRTY;
  }

  std::vector<kvm_dirty_gfn> entries_ = std::vector<kvm_dirty_gfn>(kEntries);
  std::unique_ptr<DirtyRingSampler> sampler_;
};

// A ring-full exit that finds the ring already drained (the drain thread
// emptied it between the exit and the call) marks no entry KVM never wrote:
// KVM's reset would walk past its own entries and the ring would read full
// for good - a vCPU spinning on ring-full exits.
TEST_F(RingFullTest, AnEmptyRingFullExitMarksNothingKvmDidNotWrite) {
  sampler_->OnRingFull(0);
  EXPECT_EQ(Marked(), 0);
  EXPECT_EQ(sampler_->stats().ring_overruns, 0u);
}

// Entries KVM wrote are harvested and marked reset, and only those.
TEST_F(RingFullTest, WrittenEntriesAreMarkedReset) {
  Write(0, 3);
  Write(1, 4);
  sampler_->OnRingFull(0);
  EXPECT_EQ(Marked(), 2);
  EXPECT_EQ(sampler_->entries_harvested(), 2u);
}

// Full twice running with nothing to harvest: KVM lapped the ring; every
// entry is marked so that one reset advances a lap, and it is counted.
TEST_F(RingFullTest, TwoEmptyRingFullExitsInARowAreAnOverrun) {
  sampler_->OnRingFull(0);
  sampler_->OnRingFull(0);
  EXPECT_EQ(Marked(), static_cast<int>(kEntries));
  EXPECT_EQ(sampler_->stats().ring_overruns, 1u);
}

// An empty exit, then entries harvested (the vCPU ran on), then an empty
// exit again: not in a row, so no overrun.
TEST_F(RingFullTest, AHarvestBetweenEmptyExitsIsNoOverrun) {
  sampler_->OnRingFull(0);
  Write(5, 7);
  sampler_->OnRingFull(0);
  entries_[5].flags = 0;  // KVM's reset
  sampler_->OnRingFull(0);
  EXPECT_EQ(Marked(), 0);
  EXPECT_EQ(sampler_->stats().ring_overruns, 0u);
}

}  // namespace
}  // namespace numavm
