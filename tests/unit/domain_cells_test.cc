// A libvirt domain's guest NUMA cells: read from its live XML, and found in
// the QEMU process's mappings (the layout QEMU 7.2 gave libvirt domains
// with 2 and 4 cells, memfd and anonymous, recorded from real domains).
#include "balancer/libvirt/domain_cells.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

// The <cpu> of a live two-cell domain as libvirt prints it, with a
// <numatune> before it that must not be taken for the cells.
constexpr char kTwoCells[] = R"(<domain type='qemu' id='1'>
  <vcpu placement='static'>4</vcpu>
  <numatune><memory mode='strict' nodeset='0-1'/><memnode cellid='1' mode='preferred' nodeset='1'/></numatune>
  <cpu mode='custom' match='exact' check='full'>
    <model fallback='forbid'>qemu64</model>
    <numa>
      <cell id='0' cpus='0-1' memory='65536' unit='KiB'/>
      <cell id='1' cpus='2,3' memory='96' unit='MiB'/>
    </numa>
  </cpu>
</domain>)";

TEST(DomainCellsTest, CellsComeFromTheCpuElementWithTheirVcpusAndBytes) {
  absl::StatusOr<std::vector<DomainCell>> cells = ParseDomainCells(kTwoCells, 4);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].id, 0);
  EXPECT_EQ((*cells)[0].vcpus, (std::vector<int>{0, 1}));
  EXPECT_EQ((*cells)[0].bytes, 64u << 20);
  EXPECT_EQ((*cells)[1].id, 1);
  EXPECT_EQ((*cells)[1].vcpus, (std::vector<int>{2, 3}));
  EXPECT_EQ((*cells)[1].bytes, 96u << 20);
  // Each cell's own memory binding, from <numatune><memnode>.
  EXPECT_EQ((*cells)[0].memnode_nodeset, "");
  EXPECT_EQ((*cells)[1].memnode_mode, "preferred");
  EXPECT_EQ((*cells)[1].memnode_nodeset, "1");
}

TEST(DomainCellsTest, ADomainWithoutCellsHasNone) {
  absl::StatusOr<std::vector<DomainCell>> cells = ParseDomainCells(
      "<domain><vcpu>2</vcpu><cpu mode='host-model'/><numatune><memory mode='strict' "
      "nodeset='0'/></numatune></domain>",
      2);
  ASSERT_TRUE(cells.ok()) << cells.status();
  EXPECT_TRUE(cells->empty());
  EXPECT_TRUE(ParseDomainCells("<domain/>", 2)->empty());
}

TEST(DomainCellsTest, BadCellsAreErrorsThatNameTheCell) {
  auto error = [](const std::string& cell, int vcpus) {
    absl::StatusOr<std::vector<DomainCell>> c =
        ParseDomainCells("<domain><cpu><numa>" + cell + "</numa></cpu></domain>", vcpus);
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_EQ(error("<cell id='0' cpus='0-2' memory='1024'/>", 2),
            "guest cell 0 cpus='0-2': CPU list '0-2' names 2; ids go up to 1");
  EXPECT_EQ(error("<cell id='0' cpus='0' memory='1024'/><cell id='1' cpus='0' memory='1024'/>", 2),
            "guest cell 1 names vCPU 0 twice");
  EXPECT_EQ(error("<cell id='3' cpus='0'/>", 2), "guest cell 3 has no memory");
  EXPECT_EQ(error("<cell id='0' cpus='0' memory='1' unit='parsec'/>", 2),
            "unknown memory unit 'parsec'");
  EXPECT_EQ(error("<cell id='0' cpus='0' memory='18446744073709551615' unit='GiB'/>", 2),
            "guest cell 0 is too large");
}

MapsEntry Map(uintptr_t start, uint64_t mib, bool writable = true) {
  return MapsEntry{start, start + (mib << 20), writable, ""};
}

TEST(DomainCellsTest, CellBackendsAreTheRunOfTheirSizesFromTheTopDown) {
  // QEMU 7.2, cells of 48, 40, 56 and 32 MiB: each backend below the one
  // before, TCG's code buffers (63 MiB, rwx) above them.
  const std::vector<MapsEntry> maps = {Map(0x7f2e58800000, 32),       Map(0x7f2e5aa00000, 56),
                                       Map(0x7f2e5e400000, 40),       Map(0x7f2e60e00000, 48),
                                       Map(0x7f2e64000000, 63),       Map(0x7f2e68000000, 63),
                                       Map(0x7f2e70000000, 48, false)};
  std::vector<DomainCell> cells = {
      {0, {0}, 48u << 20}, {1, {1}, 40u << 20}, {2, {2}, 56u << 20}, {3, {3}, 32u << 20}};
  absl::StatusOr<std::vector<HostRange>> ram = FindCellRam(maps, cells);
  ASSERT_TRUE(ram.ok()) << ram.status();
  ASSERT_EQ(ram->size(), 4u);
  EXPECT_EQ((*ram)[0].start, 0x7f2e60e00000u);
  EXPECT_EQ((*ram)[1].start, 0x7f2e5e400000u);
  EXPECT_EQ((*ram)[2].start, 0x7f2e5aa00000u);
  EXPECT_EQ((*ram)[3].start, 0x7f2e58800000u);
  EXPECT_EQ((*ram)[2].bytes, 56u << 20);
}

TEST(DomainCellsTest, EqualCellsAreTakenInOrderAndAmbiguityIsRefused) {
  std::vector<DomainCell> cells = {{0, {0}, 64u << 20}, {1, {1}, 64u << 20}};
  absl::StatusOr<std::vector<HostRange>> ram =
      FindCellRam({Map(0x7efc8bffe000, 64), Map(0x7efc8ffff000, 64)}, cells);
  ASSERT_TRUE(ram.ok()) << ram.status();
  EXPECT_EQ((*ram)[0].start, 0x7efc8ffff000u) << "cell 0 was mapped first, so higher";
  EXPECT_EQ((*ram)[1].start, 0x7efc8bffe000u);
  // A third mapping of that size: which two are the cells is not known.
  EXPECT_EQ(FindCellRam({Map(0x10000000, 64), Map(0x20000000, 64), Map(0x30000000, 64)}, cells)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FindCellRam({Map(0x10000000, 64)}, cells).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace numavm
