// The lock and the pinning record of an attached libvirt domain
// (balancer/libvirt/pinning_record.h), on a real directory.
#include "balancer/libvirt/pinning_record.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace numavm {
namespace {

constexpr char kUuid[] = "6695eb01-f6a4-8304-79aa-97f2502e193f";

class PinningRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/numavm-pin-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(PinningRecordTest, OneHolderAtATime) {
  absl::StatusOr<PinningRecord> first = PinningRecord::Claim(dir_, kUuid, "web1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->recovered().has_value());
  absl::StatusOr<PinningRecord> second = PinningRecord::Claim(dir_, kUuid, "web1");
  ASSERT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  EXPECT_NE(second.status().message().find("domain 'web1' is already attached by numavm pid " +
                                           std::to_string(getpid())),
            std::string::npos)
      << second.status();
  first->Release();
  EXPECT_TRUE(PinningRecord::Claim(dir_, kUuid, "web1").ok()) << "free once released";
}

TEST_F(PinningRecordTest, ARecordLeftBehindIsRecoveredAndRestorable) {
  {
    absl::StatusOr<PinningRecord> r = PinningRecord::Claim(dir_, kUuid, "web1");
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->Save({{3}, {0, 1, 2, 3}}, 4242).ok());
    // Destroyed without Release: as when numavm dies (the lock goes).
  }
  std::vector<SavedPinning> stale = StaleRecords(dir_);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0].name, "web1");
  EXPECT_EQ(stale[0].qemu_pid, 4242);
  EXPECT_EQ(stale[0].pinning, (std::vector<std::vector<int>>{{3}, {0, 1, 2, 3}}));
  absl::StatusOr<PinningRecord> again = PinningRecord::Claim(dir_, kUuid, "web1");
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(again->recovered().has_value());
  EXPECT_EQ(again->recovered()->pinning[0], std::vector<int>{3});
  // Held again: no longer stale, and not removable by detach.
  EXPECT_TRUE(StaleRecords(dir_).empty());
  EXPECT_TRUE(absl::IsFailedPrecondition(RemoveStaleRecord(dir_, kUuid)));
  again->Forget();  // pinning back, still attached
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/domains/" + kUuid + ".json"));
}

TEST_F(PinningRecordTest, RemovingAStaleRecord) {
  {
    absl::StatusOr<PinningRecord> r = PinningRecord::Claim(dir_, kUuid, "web1");
    ASSERT_TRUE(r.ok());
    ASSERT_TRUE(r->Save({{1}}, 7).ok());
  }
  ASSERT_TRUE(RemoveStaleRecord(dir_, kUuid).ok());
  EXPECT_TRUE(StaleRecords(dir_).empty());
}

TEST_F(PinningRecordTest, BadRecordsAndNamesAreRefused) {
  EXPECT_FALSE(PinningRecord::Claim(dir_, "../../etc/passwd", "x").ok());
  EXPECT_FALSE(SavedPinningFromJson("not json").ok());
  EXPECT_FALSE(SavedPinningFromJson(R"({"uuid": "ab", "pinning": [[]]})").ok());
  EXPECT_FALSE(SavedPinningFromJson(R"({"uuid": "ab", "pinning": [[-1]]})").ok());
  EXPECT_FALSE(SavedPinningFromJson(R"({"uuid": "ab", "pinning": "0-3"})").ok());
  absl::StatusOr<SavedPinning> good =
      SavedPinningFromJson(R"({"uuid": "ab", "name": "w", "pid": 5, "pinning": [[0, 2]]})");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->pinning[0], (std::vector<int>{0, 2}));
}

}  // namespace
}  // namespace numavm
