#include "vmm/linux_boot.h"

#include <glob.h>
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vmm/e820.h"

namespace numavm {
namespace {

constexpr uint64_t kMiB = 1 << 20;

// A bzImage as the kernel's build writes one: 4 setup sectors after the
// boot sector, the setup header at 0x1f1, then `kernel_bytes` of 64-bit
// kernel.
std::vector<uint8_t> BzImage(uint64_t kernel_bytes = 4 * kMiB) {
  std::vector<uint8_t> file(5 * 512 + kernel_bytes, 0);
  setup_header h{};
  h.setup_sects = 4;
  h.boot_flag = 0xaa55;
  h.header = 0x53726448;
  h.version = 0x020f;
  h.syssize = static_cast<uint32_t>(kernel_bytes / 16);
  h.pref_address = 16 * kMiB;
  h.init_size = 24 * kMiB;
  h.kernel_alignment = 2 * kMiB;
  h.relocatable_kernel = 1;
  h.xloadflags = XLF_KERNEL_64 | XLF_CAN_BE_LOADED_ABOVE_4G;
  h.cmdline_size = 2047;
  h.initrd_addr_max = 0x7fffffff;
  std::memcpy(file.data() + 0x1f1, &h, sizeof(h));
  return file;
}

setup_header& HeaderOf(std::vector<uint8_t>& file) {
  return *reinterpret_cast<setup_header*>(file.data() + 0x1f1);
}

std::string Error(const std::vector<uint8_t>& file) {
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(file, "bz");
  return k.ok() ? "ok" : std::string(k.status().message());
}

TEST(LinuxBoot, ABzImageIsRead) {
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(BzImage(), "bz");
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->protocol, 0x020f);
  EXPECT_EQ(k->setup_bytes, 5u * 512);
  EXPECT_EQ(k->kernel_bytes, 4 * kMiB);
  EXPECT_EQ(k->init_size, 24 * kMiB);
  EXPECT_TRUE(k->relocatable);
}

TEST(LinuxBoot, WhatIsNotA64BitBzImageIsSaidSo) {
  EXPECT_EQ(Error(std::vector<uint8_t>(100, 0)),
            "kernel bz: not a Linux kernel (100 bytes: too short for a boot header)");
  EXPECT_EQ(Error(std::vector<uint8_t>(8192, 0x41)),
            "kernel bz: not a Linux kernel (no 'HdrS' boot header)");
  std::vector<uint8_t> elf(8192, 0);
  std::memcpy(elf.data(),
              "\x7f"
              "ELF",
              4);
  EXPECT_EQ(Error(elf),
            "kernel bz: an ELF file (a vmlinux?); numavm boots a bzImage (arch/x86/boot/bzImage)");
  std::vector<uint8_t> old = BzImage();
  HeaderOf(old).version = 0x020a;
  EXPECT_EQ(Error(old), "kernel bz: boot protocol 2.10 is too old: the 64-bit entry needs 2.12");
  std::vector<uint8_t> i386 = BzImage();
  HeaderOf(i386).xloadflags = 0;
  EXPECT_EQ(Error(i386), "kernel bz: no 64-bit entry (xloadflags 0x0): a 32-bit kernel?");
  std::vector<uint8_t> cut = BzImage();
  cut.resize(cut.size() - 4096);
  EXPECT_EQ(Error(cut),
            "kernel bz: truncated: its header says 4196864 bytes, the file has 4192768");
}

TEST(LinuxBoot, TheKernelAndInitrdArePlaced) {
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(BzImage(), "bz");
  ASSERT_TRUE(k.ok());
  absl::StatusOr<LinuxBootPlan> p = PlanLinuxBoot(*k, 512 * kMiB, 8 * kMiB + 5, 30);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->kernel, 16 * kMiB);
  EXPECT_EQ(p->entry, 16 * kMiB + 0x200);
  EXPECT_EQ(p->initrd, 512 * kMiB - 9 * kMiB + (kMiB - 4096)) << "top of RAM, 4 KiB aligned";
  EXPECT_LE(p->initrd + p->initrd_bytes, 512 * kMiB);
  EXPECT_EQ(p->initrd_bytes, 8 * kMiB + 5);
  absl::StatusOr<LinuxBootPlan> none = PlanLinuxBoot(*k, 512 * kMiB, 0, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->initrd, 0u);
}

TEST(LinuxBoot, WhatDoesNotFitIsSaidSo) {
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(BzImage(), "bz");
  ASSERT_TRUE(k.ok());
  auto error = [&](uint64_t ram, uint64_t initrd, size_t cmdline) {
    absl::StatusOr<LinuxBootPlan> p = PlanLinuxBoot(*k, ram, initrd, cmdline);
    return p.ok() ? std::string("ok") : std::string(p.status().message());
  };
  EXPECT_EQ(error(256 * kMiB, 300 * kMiB, 0),
            "an initrd of 300 MiB does not fit between the kernel's end (0x2800000) and "
            "0x10000000 (the end of guest RAM or of where this kernel takes an initrd)");
  EXPECT_EQ(error(32 * kMiB, 0, 0),
            "the kernel needs 24 MiB from 0x1000000: more than the guest's 32 MiB of RAM");
  EXPECT_EQ(error(256 * kMiB, 0, 2048),
            "kernel command line of 2048 bytes; this kernel takes at most 2047");
  EXPECT_EQ(error(5ull << 30, 0, 0),
            "a Linux guest has at most 4076 MiB of RAM for now (5120 MiB asked): above it sit "
            "the IOAPIC and local APICs");
}

TEST(E820, RamLessTheFirmwareArea) {
  absl::StatusOr<std::vector<E820Entry>> m = BuildE820(512 * kMiB, LinuxReservedRanges());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, (std::vector<E820Entry>{{0, 0x9fc00, kE820Ram},
                                        {0x9fc00, 0x100000 - 0x9fc00, kE820Reserved},
                                        {0x100000, 511 * kMiB, kE820Ram}}));
}

TEST(E820, ReservedRangesPastRamAdjacentOnesAndOverlaps) {
  absl::StatusOr<std::vector<E820Entry>> m =
      BuildE820(64 * kMiB, {{0xfec00000, 0x1000, kE820Reserved},
                            {0x1000, 0x1000, kE820Reserved},
                            {0x2000, 0x1000, kE820Reserved},
                            {0x3000, 0x1000, kE820Acpi}});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, (std::vector<E820Entry>{{0, 0x1000, kE820Ram},
                                        {0x1000, 0x2000, kE820Reserved},
                                        {0x3000, 0x1000, kE820Acpi},
                                        {0x4000, 64 * kMiB - 0x4000, kE820Ram},
                                        {0xfec00000, 0x1000, kE820Reserved}}));
  absl::StatusOr<std::vector<E820Entry>> overlap =
      BuildE820(64 * kMiB, {{0x1000, 0x2000, kE820Reserved}, {0x2000, 0x1000, kE820Acpi}});
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.status().message(), "e820: reserved ranges at 0x1000 and 0x2000 overlap");
}

TEST(LinuxBoot, TheZeroPageCarriesTheLoadersFields) {
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(BzImage(), "bz");
  ASSERT_TRUE(k.ok());
  absl::StatusOr<LinuxBootPlan> p = PlanLinuxBoot(*k, 512 * kMiB, kMiB, 10);
  ASSERT_TRUE(p.ok());
  absl::StatusOr<std::vector<E820Entry>> m = BuildE820(512 * kMiB, LinuxReservedRanges());
  ASSERT_TRUE(m.ok());
  absl::StatusOr<boot_params> bp = BuildBootParams(*k, *p, *m, kLinuxAcpiTables);
  ASSERT_TRUE(bp.ok()) << bp.status();
  EXPECT_EQ(bp->hdr.version, 0x020f) << "the kernel's own header";
  EXPECT_EQ(bp->hdr.type_of_loader, 0xff);
  EXPECT_EQ(bp->hdr.loadflags & (LOADED_HIGH | CAN_USE_HEAP), LOADED_HIGH | CAN_USE_HEAP);
  EXPECT_EQ(bp->hdr.cmd_line_ptr, kLinuxCmdline);
  EXPECT_EQ(bp->hdr.ramdisk_image, p->initrd);
  EXPECT_EQ(bp->hdr.ramdisk_size, kMiB);
  EXPECT_EQ(bp->acpi_rsdp_addr, kLinuxAcpiTables);
  ASSERT_EQ(bp->e820_entries, 3);
  EXPECT_EQ(bp->e820_table[2].addr, 0x100000u);
  EXPECT_EQ(bp->e820_table[2].size, 511 * kMiB);
  EXPECT_EQ(bp->e820_table[1].type, kE820Reserved);
  static_assert(sizeof(boot_params) == 4096, "the zero page is one page");
}

// Debian's kernel, where the NUMA lab has fetched it (build/lab-cache).
TEST(LinuxBoot, DebiansKernelIsRead) {
  glob_t g{};
  const std::string pattern =
      std::string(NUMAVM_SOURCE_DIR) + "/build/lab-cache/kernel-*/boot/vmlinuz-*";
  if (glob(pattern.c_str(), 0, nullptr, &g) != 0 || g.gl_pathc == 0) {
    globfree(&g);
    GTEST_SKIP() << "no lab kernel in build/lab-cache (scripts/lab.sh fetches one)";
  }
  const std::string path = g.gl_pathv[0];
  globfree(&g);
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
  absl::StatusOr<LinuxKernel> k = ParseLinuxKernel(file, path);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_GE(k->protocol, 0x020f);
  EXPECT_TRUE(k->relocatable);
  EXPECT_GT(k->kernel_bytes, 4 * kMiB);
  absl::StatusOr<LinuxBootPlan> p = PlanLinuxBoot(*k, 1024 * kMiB, 16 * kMiB, 64);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_GE(p->initrd, p->kernel + k->init_size);
}

}  // namespace
}  // namespace numavm
