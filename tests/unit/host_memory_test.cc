#include "vmm/host_memory.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(ParseMeminfo, ReadsTotalsAndHugePages) {
  HostMemoryInfo info = ParseMeminfo(
      "MemTotal:       24576000 kB\n"
      "MemFree:        20000000 kB\n"
      "MemAvailable:   22000000 kB\n"
      "HugePages_Total:      16\n"
      "HugePages_Free:        4\n");
  EXPECT_EQ(info.total_bytes, 24576000ull * 1024);
  EXPECT_EQ(info.available_bytes, 22000000ull * 1024);
  EXPECT_EQ(info.huge_pages_total, 16u);
  EXPECT_EQ(info.huge_pages_free, 4u);
}

}  // namespace
}  // namespace numavm
