#include "vmm/vm_config.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(NormalizeVmConfig, FillsInOneCellWithEveryVcpu) {
  VmConfig c;
  c.vcpus = 3;
  c.memory_bytes = 64ull << 20;
  ASSERT_TRUE(NormalizeVmConfig(c).ok());
  ASSERT_EQ(c.cells.size(), 1u);
  EXPECT_EQ(c.cells[0].memory_bytes, 64ull << 20);
  EXPECT_EQ(c.cells[0].vcpus, (std::vector<int>{0, 1, 2}));
}

TEST(NormalizeVmConfig, RejectsZeroVcpus) {
  VmConfig c;
  c.vcpus = 0;
  absl::Status s = NormalizeVmConfig(c);
  EXPECT_EQ(s.message(), "--vcpus must be between 1 and 64, got 0");
}

TEST(NormalizeVmConfig, RejectsTinyAndMisalignedMemory) {
  VmConfig tiny;
  tiny.memory_bytes = 1 << 20;
  EXPECT_NE(NormalizeVmConfig(tiny).message().find("at least 16 MiB"), absl::string_view::npos);
  VmConfig odd;
  odd.memory_bytes = (64ull << 20) + 100;
  EXPECT_FALSE(NormalizeVmConfig(odd).ok());
  VmConfig huge;
  huge.backing = Backing::kHugetlb;
  huge.memory_bytes = (64ull << 20) + 4096;
  EXPECT_NE(NormalizeVmConfig(huge).message().find("multiple of 2 MiB"), absl::string_view::npos);
}

TEST(NormalizeVmConfig, CellsDefineMemoryAndMustCoverEveryVcpuOnce) {
  VmConfig c;
  c.vcpus = 2;
  c.cells = {{32ull << 20, {0}}, {16ull << 20, {1}}};
  ASSERT_TRUE(NormalizeVmConfig(c).ok());
  EXPECT_EQ(c.memory_bytes, 48ull << 20);

  VmConfig twice;
  twice.vcpus = 2;
  twice.cells = {{32ull << 20, {0, 1}}, {16ull << 20, {1}}};
  EXPECT_EQ(NormalizeVmConfig(twice).message(), "vCPU 1 is in more than one cell");

  VmConfig missing;
  missing.vcpus = 2;
  missing.cells = {{32ull << 20, {0}}};
  EXPECT_FALSE(NormalizeVmConfig(missing).ok());

  VmConfig stranger;
  stranger.vcpus = 1;
  stranger.cells = {{32ull << 20, {0, 5}}};
  EXPECT_NE(NormalizeVmConfig(stranger).message().find("names vCPU 5"), absl::string_view::npos);
}

TEST(CheckHostCanFit, NamesTheHostLimit) {
  VmConfig c;
  c.memory_bytes = 32ull << 30;
  absl::Status s = CheckHostCanFit(c, 24ull << 30, 20ull << 30);
  EXPECT_EQ(s.message(), "--memory 32 GiB is larger than this host's memory (24 GiB)");
  c.memory_bytes = 22ull << 30;
  EXPECT_NE(CheckHostCanFit(c, 24ull << 30, 20ull << 30).message().find("available"),
            absl::string_view::npos);
  c.memory_bytes = 1ull << 30;
  EXPECT_TRUE(CheckHostCanFit(c, 24ull << 30, 20ull << 30).ok());
}

}  // namespace
}  // namespace numavm
