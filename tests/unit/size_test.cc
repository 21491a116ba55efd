#include "base/size.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(ParseSize, AcceptsSuffixes) {
  EXPECT_EQ(*ParseSize("512M"), 512ull << 20);
  EXPECT_EQ(*ParseSize("4G"), 4ull << 30);
  EXPECT_EQ(*ParseSize("4GiB"), 4ull << 30);
  EXPECT_EQ(*ParseSize("64k"), 64ull << 10);
  EXPECT_EQ(*ParseSize("4096"), 4096u);
  EXPECT_EQ(*ParseSize(" 2T "), 2ull << 40);
}

TEST(ParseSize, RejectsGarbageWithTheInputInTheMessage) {
  absl::StatusOr<uint64_t> bad = ParseSize("lots");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'lots'"), absl::string_view::npos);
  EXPECT_FALSE(ParseSize("12X").ok());
  EXPECT_FALSE(ParseSize("").ok());
  EXPECT_FALSE(ParseSize("99999999999999T").ok());
}

TEST(FormatSize, PicksReadableUnits) {
  EXPECT_EQ(FormatSize(512ull << 20), "512 MiB");
  EXPECT_EQ(FormatSize(4ull << 30), "4 GiB");
  EXPECT_EQ(FormatSize(516140ull << 10), "504.0 MiB");
  EXPECT_EQ(FormatSize(100), "100 B");
}

}  // namespace
}  // namespace numavm
