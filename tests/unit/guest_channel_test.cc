#include "vmm/guest_channel.h"

#include <gtest/gtest.h>

#include <cstring>

#include "vmm/guest_abi.h"

namespace numavm {
namespace {

class RecordingObserver final : public GuestObserver {
 public:
  std::vector<LayoutHint> hints;
  void OnLayout(const LayoutHint& hint) override { hints.push_back(hint); }
};

class GuestChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const uint64_t region[] = {16ull << 20};
    absl::StatusOr<GuestMemory> m = GuestMemory::Create(Backing::kAnon, region);
    ASSERT_TRUE(m.ok()) << m.status();
    memory_ = std::make_unique<GuestMemory>(*std::move(m));
    ChannelLimits limits;
    limits.console_bytes = 100;
    channel_ = std::make_unique<GuestChannel>(
        *memory_, 2, [this] { return now_; }, &observer_,
        [this](int vcpu, absl::string_view line) { lines_.emplace_back(line); }, limits);
  }
  abi::Mailbox* Box(int vcpu) {
    return memory_->As<abi::Mailbox>(GuestAddress{abi::kMailboxBase + vcpu * abi::kMailboxBytes});
  }

  absl::Duration now_ = absl::Milliseconds(5);
  RecordingObserver observer_;
  std::vector<std::string> lines_;
  std::unique_ptr<GuestMemory> memory_;
  std::unique_ptr<GuestChannel> channel_;
};

TEST_F(GuestChannelTest, UnknownPortIsAFaultNamingThePort) {
  GuestChannel::Reply r = channel_->HandleOut(0, 0x1234, 4, 0xdead);
  EXPECT_EQ(r.kind, GuestChannel::Reply::kFault);
  EXPECT_NE(r.fault.find("unknown I/O port 0x1234"), std::string::npos);
}

TEST_F(GuestChannelTest, ConsoleLinesAreDeliveredAndFloodsStopped) {
  for (char c : std::string("hi\n")) channel_->HandleOut(1, abi::kPortConsole, 1, c);
  ASSERT_EQ(lines_, (std::vector<std::string>{"hi"}));
  GuestChannel::Reply r;
  int writes = 3;
  do {
    r = channel_->HandleOut(0, abi::kPortConsole, 1, 'x');
    ++writes;
  } while (r.kind == GuestChannel::Reply::kContinue && writes < 1000);
  EXPECT_EQ(r.kind, GuestChannel::Reply::kFault);
  EXPECT_EQ(writes, 101);
  EXPECT_NE(r.fault.find("console output exceeded 100 bytes"), std::string::npos);
}

TEST_F(GuestChannelTest, UnterminatedTextIsCutAtTheMailbox) {
  std::memset(Box(0)->text, 'X', sizeof(abi::Mailbox::text));
  channel_->HandleOut(0, abi::kPortPhase, 4, 0);
  RunRecord rec = channel_->Snapshot();
  ASSERT_EQ(rec.phases.size(), 1u);
  EXPECT_EQ(rec.phases[0].name, std::string(sizeof(abi::Mailbox::text), 'X'));
  EXPECT_EQ(rec.phases[0].at, absl::Milliseconds(5));
}

TEST_F(GuestChannelTest, ProgressIsTimestampedAndNeverGoesBackwards) {
  Box(1)->u64[0] = 1000;
  channel_->HandleOut(1, abi::kPortProgress, 4, 0);
  now_ = absl::Milliseconds(10);
  Box(1)->u64[0] = 500;  // a hostile or buggy guest
  channel_->HandleOut(1, abi::kPortProgress, 4, 0);
  Box(1)->u64[0] = 3000;
  channel_->HandleOut(1, abi::kPortProgress, 4, 0);
  RunRecord rec = channel_->Snapshot();
  ASSERT_EQ(rec.vcpus[1].progress.size(), 2u);
  EXPECT_EQ(rec.vcpus[1].bytes(), 3000u);
  EXPECT_EQ(rec.vcpus[1].progress[1].at, absl::Milliseconds(10));
  EXPECT_EQ(channel_->ProgressBytes(), (std::vector<uint64_t>{0, 3000}));
}

TEST_F(GuestChannelTest, LayoutOutsideRamIsDropped) {
  Box(0)->u64[0] = 8ull << 20;
  Box(0)->u64[1] = 1ull << 20;
  Box(0)->u64[2] = 0b11;
  channel_->HandleOut(0, abi::kPortLayout, 4, 0);
  Box(0)->u64[0] = ~0ull - 4096;
  Box(0)->u64[1] = 1ull << 40;
  channel_->HandleOut(0, abi::kPortLayout, 4, 0);
  Box(0)->u64[0] = 15ull << 20;
  Box(0)->u64[1] = 2ull << 20;  // runs past the end of RAM
  channel_->HandleOut(0, abi::kPortLayout, 4, 0);
  ASSERT_EQ(observer_.hints.size(), 1u);
  EXPECT_EQ(observer_.hints[0].start.value, 8ull << 20);
  EXPECT_EQ(observer_.hints[0].vcpu_mask, 0b11u);
}

TEST_F(GuestChannelTest, SleepIsCappedAndExitRecordsStatus) {
  Box(0)->u64[0] = ~0ull;
  GuestChannel::Reply sleep = channel_->HandleOut(0, abi::kPortSleep, 4, 0);
  EXPECT_EQ(sleep.kind, GuestChannel::Reply::kSleep);
  EXPECT_EQ(sleep.sleep, absl::Seconds(10));
  GuestChannel::Reply exit = channel_->HandleOut(0, abi::kPortExit, 4, 7);
  EXPECT_EQ(exit.kind, GuestChannel::Reply::kExit);
  EXPECT_EQ(exit.exit_status, 7u);
  EXPECT_EQ(channel_->Snapshot().vcpus[0].exit_status, 7u);
}

TEST_F(GuestChannelTest, ResultsAreSummedPerKey) {
  std::strcpy(Box(0)->text, "bytes");
  Box(0)->u64[0] = 10;
  channel_->HandleOut(0, abi::kPortResult, 4, 0);
  std::strcpy(Box(1)->text, "bytes");
  Box(1)->u64[0] = 32;
  channel_->HandleOut(1, abi::kPortResult, 4, 0);
  RunRecord rec = channel_->Snapshot();
  EXPECT_EQ(rec.SumResult("bytes"), 42u);
  EXPECT_FALSE(rec.SumResult("mismatches").has_value());
}

}  // namespace
}  // namespace numavm
