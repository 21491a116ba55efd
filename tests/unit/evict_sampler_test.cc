// The evict sampler (balancer/sampling/hint_fault_sampler.h, kind evict) on
// plain anonymous memory, no VM: a probe it takes away comes back with its
// contents on its first access, which is a sample with its kind; a page
// never touched comes back as zeros and is no sample; Stop puts every page
// still away back; a run another thread made inaccessible is left as it
// is, not taken; a move the balancer asks for while a probe is away is the
// sampler's; and runs longer than one read's worth of iovecs are taken
// whole.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/time/clock.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/hint_fault_sampler.h"

namespace numavm {
namespace {

constexpr uint64_t kPages = 64;

class EvictSamplerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    void* map = ::mmap(nullptr, pages_ * kGuestPageBytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    memory_ = static_cast<uint8_t*>(map);
    ::madvise(memory_, pages_ * kGuestPageBytes, MADV_NOHUGEPAGE);
    // Touched pages hold their number (+1, mod 251); the rest are never
    // touched.
    for (uint64_t p = 0; p < touched_; ++p) {
      std::memset(Page(p), static_cast<int>(p % 251 + 1), kGuestPageBytes);
    }
    GuestRamRegion r;
    r.bytes = pages_ * kGuestPageBytes;
    r.host = memory_;
    auto s = HintFaultSampler::Create(
        {r}, 1, [](pid_t) { return -1; }, [] { return absl::ZeroDuration(); }, HintFaults::kEvict);
    ASSERT_TRUE(s.ok()) << s.status();
    sampler_ = *std::move(s);
    absl::Status started = sampler_->Start();
    if (!started.ok()) GTEST_SKIP() << "no userfaultfd here: " << started;
  }
  void TearDown() override {
    sampler_.reset();
    if (memory_ != nullptr) ::munmap(memory_, pages_ * kGuestPageBytes);
  }
  uint8_t* Page(uint64_t p) { return memory_ + p * kGuestPageBytes; }
  bool Resident(uint64_t p) {
    unsigned char v = 0;
    return ::mincore(Page(p), kGuestPageBytes, &v) == 0 && (v & 1);
  }
  void Arm(std::vector<GfnRange> probes) {
    ScanPlan plan;
    plan.probes = std::move(probes);
    ASSERT_TRUE(sampler_->Arm(plan).ok());
  }

  uint64_t pages_ = kPages;
  uint64_t touched_ = 48;  // pages 48-63 never touched
  uint8_t* memory_ = nullptr;
  std::unique_ptr<HintFaultSampler> sampler_;
};

TEST_F(EvictSamplerTest, AProbeComesBackWithItsContentsAndItsAccessIsASample) {
  Arm({{0, 8}, {16, 4}});
  EXPECT_EQ(sampler_->stats().pages_armed, 12u);
  for (uint64_t p : {0, 7, 16, 19}) EXPECT_FALSE(Resident(p)) << "page " << p << " not taken";
  EXPECT_TRUE(Resident(8));
  volatile uint8_t* read = Page(3);
  EXPECT_EQ(read[100], 4);  // a read, brought back
  Page(17)[5] = 0xee;       // a write, brought back first
  EXPECT_EQ(Page(17)[4], 18);
  EXPECT_EQ(Page(17)[5], 0xee);
  // (The handler records a sample just after it woke the thread.)
  AccessBatch batch;
  for (int i = 0; i < 200 && batch.size() < 2; ++i) {
    ASSERT_TRUE(sampler_->Collect(batch).ok());
    if (batch.size() < 2) absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].gfn, 3u);
  EXPECT_EQ(batch[0].kind, AccessKind::kRead);
  EXPECT_EQ(batch[1].gfn, 17u);
  EXPECT_EQ(batch[1].kind, AccessKind::kWrite);
  // Stop puts the other ten back.
  sampler_->Stop();
  for (uint64_t p = 0; p < 48; ++p) {
    for (uint64_t at : {0ul, 4095ul}) {
      if (p == 17 && at == 5) continue;
      ASSERT_EQ(Page(p)[at], p + 1) << "page " << p;
    }
  }
}

TEST_F(EvictSamplerTest, AFirstTouchGetsZerosAndIsNoSample) {
  Arm({{48, 4}});  // never touched: nothing to take
  EXPECT_EQ(sampler_->stats().pages_armed, 0u);
  volatile uint8_t* fresh = Page(50);
  EXPECT_EQ(fresh[0], 0);
  Page(60)[1] = 7;
  EXPECT_EQ(Page(60)[0], 0);
  EXPECT_EQ(Page(60)[1], 7);
  absl::SleepFor(absl::Milliseconds(50));  // time for a sample to be recorded
  AccessBatch batch;
  ASSERT_TRUE(sampler_->Collect(batch).ok());
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(sampler_->stats().samples, 0u);
}

TEST_F(EvictSamplerTest, ARunAnotherThreadMadeInaccessibleIsLeftAsItIs) {
  // As a protected page move does for a moment.
  ASSERT_EQ(::mprotect(Page(4), 4 * kGuestPageBytes, PROT_NONE), 0);
  Arm({{4, 4}});
  ASSERT_EQ(::mprotect(Page(4), 4 * kGuestPageBytes, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(sampler_->stats().pages_armed, 0u);
  for (uint64_t p = 4; p < 8; ++p) {
    EXPECT_TRUE(Resident(p));
    EXPECT_EQ(Page(p)[0], p + 1);
  }
  // Not left write-protected either: a write goes through without a sample.
  Page(5)[0] = 0x42;
  EXPECT_EQ(Page(5)[0], 0x42);
  absl::SleepFor(absl::Milliseconds(50));  // time for a sample to be recorded
  AccessBatch batch;
  ASSERT_TRUE(sampler_->Collect(batch).ok());
  EXPECT_TRUE(batch.empty());
  // And it is taken when the scan comes back.
  Arm({{4, 4}});
  EXPECT_EQ(sampler_->stats().pages_armed, 4u);
  EXPECT_FALSE(Resident(6));
  EXPECT_EQ(Page(6)[9], 7);
}

TEST_F(EvictSamplerTest, AMoveOfAnEvictedProbeIsTheSamplersAndOfAnyOtherPageIsNot) {
  Arm({{0, 8}});
  EXPECT_TRUE(sampler_->MoveHeld(2, 0)) << "an evicted probe";
  EXPECT_FALSE(sampler_->MoveHeld(9, 0)) << "a resident page moves where it is";
  EXPECT_FALSE(sampler_->MoveHeld(50, 0)) << "a page never touched is not held";
  // It comes back with its contents on the node asked for (this host's
  // only one) ...
  volatile uint8_t* read = Page(2);
  EXPECT_EQ(read[7], 3);
  void* at = Page(2);
  int node = -1;
  ASSERT_EQ(::syscall(SYS_move_pages, 0, 1, &at, nullptr, &node, 0), 0);
  EXPECT_EQ(node, 0);
  EXPECT_FALSE(sampler_->MoveHeld(2, 0)) << "back with the guest: the migrator's again";
  // ... and still comes back where that node cannot take it.
  EXPECT_TRUE(sampler_->MoveHeld(3, 63));
  EXPECT_EQ(read[kGuestPageBytes + 7], 4);
}

// More pages than one process_vm_readv takes (1,024 iovecs), all touched.
class EvictSamplerLongRunTest : public EvictSamplerTest {
 protected:
  static constexpr uint64_t kLong = 1100;
  EvictSamplerLongRunTest() { pages_ = touched_ = kLong; }
};

TEST_F(EvictSamplerLongRunTest, ARunOfMoreThanOneReadsWorthOfPagesIsTakenWhole) {
  Arm({{0, kLong}});
  EXPECT_EQ(sampler_->stats().pages_armed, kLong);
  for (uint64_t p : {0ul, 1023ul, 1024ul, kLong - 1}) {
    EXPECT_FALSE(Resident(p)) << "page " << p << " not taken";
  }
  volatile uint8_t* bytes = memory_;
  for (uint64_t p = 0; p < kLong; p += 7) {
    ASSERT_EQ(bytes[p * kGuestPageBytes + 4095], p % 251 + 1) << "page " << p;
  }
  sampler_->Stop();
  for (uint64_t p = 0; p < kLong; ++p) {
    ASSERT_EQ(bytes[p * kGuestPageBytes], p % 251 + 1) << "page " << p;
  }
}

}  // namespace
}  // namespace numavm
