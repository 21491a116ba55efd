#include "vmm/acpi_tables.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace numavm {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kAt = 0xe0000;

uint64_t Get(const std::vector<uint8_t>& b, uint64_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(b[at + i]) << (8 * i);
  return v;
}

// `cells` cells of 64 MiB with `per_cell` vCPUs each, in order.
AcpiConfig Cells(int cells, int per_cell, std::vector<std::vector<int>> distances = {}) {
  AcpiConfig c;
  c.vcpus = cells * per_cell;
  c.address = kAt;
  for (int i = 0; i < cells; ++i) {
    AcpiCell cell{i * 64 * kMiB, 64 * kMiB, {}};
    for (int v = 0; v < per_cell; ++v) cell.vcpus.push_back(i * per_cell + v);
    c.cells.push_back(cell);
  }
  c.distances = std::move(distances);
  return c;
}

// Each table by signature: its offset in the blob.
std::map<std::string, uint64_t> ByName(const AcpiTables& t) {
  std::map<std::string, uint64_t> out;
  for (const auto& [name, offset] : t.tables) out[name] = offset;
  return out;
}

// The tables a kernel reaches from the RSDP, each checked: RSDP checksums,
// XSDT entries and the FADT's DSDT pointing at tables with the right
// signature and a zero byte sum. Returns the signatures reached.
std::vector<std::string> Walk(const AcpiTables& t) {
  const std::vector<uint8_t>& b = t.bytes;
  auto offset = [&](uint64_t address) { return address - kAt; };
  std::vector<std::string> seen;
  EXPECT_EQ(t.rsdp_address, kAt);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data()), 8), "RSD PTR ");
  EXPECT_EQ(AcpiByteSum(b.data(), 20), 0) << "RSDP checksum";
  EXPECT_EQ(AcpiByteSum(b.data(), 36), 0) << "RSDP extended checksum";
  auto table = [&](uint64_t at) {
    EXPECT_LE(at + 36, b.size());
    const std::string sig(reinterpret_cast<const char*>(&b[at]), 4);
    const uint64_t length = Get(b, at + 4, 4);
    EXPECT_LE(at + length, b.size()) << sig;
    EXPECT_EQ(AcpiByteSum(&b[at], length), 0) << sig << " checksum";
    seen.push_back(sig);
    return sig;
  };
  const uint64_t xsdt = offset(Get(b, 24, 8));
  EXPECT_EQ(table(xsdt), "XSDT");
  for (uint64_t e = xsdt + 36; e < xsdt + Get(b, xsdt + 4, 4); e += 8) {
    const uint64_t at = offset(Get(b, e, 8));
    if (table(at) == "FACP") {
      EXPECT_EQ(Get(b, at + 40, 4), Get(b, at + 140, 8)) << "DSDT and X_DSDT agree";
      EXPECT_EQ(table(offset(Get(b, at + 140, 8))), "DSDT");
    }
  }
  return seen;
}

TEST(AcpiTables, OneCellHasNoSratOrSlit) {
  AcpiConfig c;
  c.vcpus = 2;
  c.address = kAt;
  absl::StatusOr<AcpiTables> t = BuildAcpiTables(c);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Walk(*t), (std::vector<std::string>{"XSDT", "FACP", "DSDT", "APIC"}));
}

TEST(AcpiTables, ChecksumsAndPointersHoldFor1To4Cells) {
  for (int cells : {1, 2, 4}) {
    SCOPED_TRACE(cells);
    absl::StatusOr<AcpiTables> t = BuildAcpiTables(Cells(cells, 2));
    ASSERT_TRUE(t.ok()) << t.status();
    const std::vector<std::string> seen = Walk(*t);
    EXPECT_EQ(seen.size(), cells >= 2 ? 6u : 4u);
  }
}

TEST(AcpiTables, MadtHasALocalApicPerVcpuAndTheIoApic) {
  absl::StatusOr<AcpiTables> t = BuildAcpiTables(Cells(1, 7));
  ASSERT_TRUE(t.ok()) << t.status();
  const std::vector<uint8_t>& b = t->bytes;
  const uint64_t at = ByName(*t)["APIC"];
  EXPECT_EQ(Get(b, at + 36, 4), kLocalApicAddress);
  std::vector<int> apic_ids;
  int ioapics = 0;
  for (uint64_t e = at + 44; e < at + Get(b, at + 4, 4); e += b[e + 1]) {
    ASSERT_GT(b[e + 1], 0);
    if (b[e] == 0) apic_ids.push_back(b[e + 3]);
    if (b[e] == 1) {
      ++ioapics;
      EXPECT_EQ(Get(b, e + 4, 4), kIoApicAddress);
    }
    if (b[e] == 2) {
      EXPECT_EQ(Get(b, e + 4, 4), 2u) << "IRQ 0 on GSI 2";
    }
  }
  EXPECT_EQ(apic_ids, (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ioapics, 1);
}

struct Srat {
  std::map<int, int> domain_of_apic;
  std::vector<std::tuple<int, uint64_t, uint64_t>> memory;  // domain, base, bytes
};

Srat ReadSrat(const AcpiTables& t) {
  const std::vector<uint8_t>& b = t.bytes;
  const uint64_t at = ByName(t).at("SRAT");
  Srat s;
  for (uint64_t e = at + 48; e < at + Get(b, at + 4, 4); e += b[e + 1]) {
    if (b[e + 1] == 0) break;
    if (b[e] == 0) {
      EXPECT_EQ(Get(b, e + 4, 4) & 1, 1u) << "enabled";
      s.domain_of_apic[b[e + 3]] = static_cast<int>(b[e + 2] | Get(b, e + 9, 3) << 8);
    } else if (b[e] == 1) {
      EXPECT_EQ(Get(b, e + 28, 4) & 1, 1u) << "enabled";
      s.memory.emplace_back(Get(b, e + 2, 4), Get(b, e + 8, 8), Get(b, e + 16, 8));
    }
  }
  return s;
}

std::vector<std::vector<int>> ReadSlit(const AcpiTables& t) {
  const std::vector<uint8_t>& b = t.bytes;
  const uint64_t at = ByName(t).at("SLIT");
  const uint64_t n = Get(b, at + 36, 8);
  std::vector<std::vector<int>> d(n, std::vector<int>(n));
  for (uint64_t i = 0; i < n; ++i) {
    for (uint64_t j = 0; j < n; ++j) d[i][j] = b[at + 44 + i * n + j];
  }
  return d;
}

TEST(AcpiTables, SratAndSlitDescribeTwoCells) {
  absl::StatusOr<AcpiTables> t = BuildAcpiTables(Cells(2, 2, {{10, 21}, {21, 10}}));
  ASSERT_TRUE(t.ok()) << t.status();
  const Srat s = ReadSrat(*t);
  EXPECT_EQ(s.domain_of_apic, (std::map<int, int>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
  ASSERT_EQ(s.memory.size(), 2u);
  EXPECT_EQ(s.memory[0], std::make_tuple(0, uint64_t{0}, 64 * kMiB));
  EXPECT_EQ(s.memory[1], std::make_tuple(1, 64 * kMiB, 64 * kMiB));
  EXPECT_EQ(ReadSlit(*t), (std::vector<std::vector<int>>{{10, 21}, {21, 10}}));
}

TEST(AcpiTables, SratAndSlitDescribeFourCellsInARing) {
  const std::vector<std::vector<int>> ring = {
      {10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}};
  absl::StatusOr<AcpiTables> t = BuildAcpiTables(Cells(4, 1, ring));
  ASSERT_TRUE(t.ok()) << t.status();
  const Srat s = ReadSrat(*t);
  EXPECT_EQ(s.domain_of_apic, (std::map<int, int>{{0, 0}, {1, 1}, {2, 2}, {3, 3}}));
  ASSERT_EQ(s.memory.size(), 4u);
  EXPECT_EQ(s.memory[3], std::make_tuple(3, 192 * kMiB, 64 * kMiB));
  EXPECT_EQ(ReadSlit(*t), ring);
  // Without distances: 10 local, 20 remote.
  absl::StatusOr<AcpiTables> plain = BuildAcpiTables(Cells(4, 1));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(ReadSlit(*plain)[1], (std::vector<int>{20, 10, 20, 20}));
}

TEST(AcpiTables, BadCellsAndDistancesAreNamed) {
  auto error = [](const AcpiConfig& c) {
    absl::StatusOr<AcpiTables> t = BuildAcpiTables(c);
    return t.ok() ? std::string("ok") : std::string(t.status().message());
  };
  AcpiConfig c = Cells(2, 2);
  c.cells[1].vcpus = {1, 3};
  EXPECT_EQ(error(c), "ACPI tables: cell 1 names vCPU 1 of another cell");
  c = Cells(2, 2);
  c.cells[1].vcpus = {3};
  EXPECT_EQ(error(c), "ACPI tables: vCPU 2 is in no cell");
  c = Cells(2, 2);
  c.cells[0].vcpus.push_back(9);
  EXPECT_EQ(error(c), "ACPI tables: cell 0 names vCPU 9 that does not exist");
  EXPECT_EQ(error(Cells(2, 1, {{10, 20}, {20, 11}})),
            "ACPI tables: distance 1->1 is 11 (a cell's own is 10)");
  EXPECT_EQ(error(Cells(2, 1, {{10, 5}, {20, 10}})),
            "ACPI tables: distance 0->1 is 5 (want 11-254, or 255)");
  EXPECT_EQ(error(Cells(3, 1, {{10, 20}, {20, 10}})),
            "ACPI tables: 2 rows of distances for 3 cells");
  c = Cells(2, 1);
  c.cells[0].bytes = 0;
  EXPECT_EQ(error(c), "ACPI tables: cell 0 has no memory");
  c.vcpus = 0;
  EXPECT_EQ(error(c), "ACPI tables: 0 vCPUs (want 1-254: xAPIC ids)");
}

// ACPICA's own disassembler (iasl, Debian's acpica-tools) reads every table
// as a kernel's ACPI code would: no checksum complaint, and the fields
// decode to the cells.
TEST(AcpiTables, AcpicaDecodesThemAsBuilt) {
  if (system("iasl -v > /dev/null 2>&1") != 0) GTEST_SKIP() << "iasl (acpica-tools) not installed";
  char dir[] = "/tmp/numavm-acpi-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::vector<std::vector<int>> ring = {
      {10, 20, 30, 20}, {20, 10, 20, 30}, {30, 20, 10, 20}, {20, 30, 20, 10}};
  absl::StatusOr<AcpiTables> t = BuildAcpiTables(Cells(4, 2, ring));
  ASSERT_TRUE(t.ok()) << t.status();
  std::map<std::string, std::string> dsl;
  for (const auto& [name, offset] : t->tables) {
    const std::string base = std::string(dir) + "/" + name;
    std::ofstream(base + ".dat", std::ios::binary)
        .write(reinterpret_cast<const char*>(&t->bytes[offset]), Get(t->bytes, offset + 4, 4));
    const std::string cmd = "cd " + std::string(dir) + " && iasl -d " + name + ".dat > " + name +
                            ".log 2>&1 && cat " + name + ".log >> " + name + ".dsl";
    ASSERT_EQ(system(cmd.c_str()), 0) << name;
    std::stringstream text;
    text << std::ifstream(base + ".dsl").rdbuf();
    dsl[name] = text.str();
    EXPECT_EQ(dsl[name].find("Incorrect checksum"), std::string::npos) << name;
    EXPECT_EQ(dsl[name].find("Warning"), std::string::npos) << name << ":\n" << dsl[name];
    EXPECT_EQ(dsl[name].find("Error"), std::string::npos) << name << ":\n" << dsl[name];
  }
  EXPECT_NE(dsl["DSDT"].find("Name (_S5, Package (0x02)"), std::string::npos) << dsl["DSDT"];
  EXPECT_NE(dsl["DSDT"].find("Device (COM1)"), std::string::npos) << dsl["DSDT"];
  EXPECT_NE(dsl["DSDT"].find("EisaId (\"PNP0501\")"), std::string::npos) << dsl["DSDT"];
  EXPECT_NE(dsl["DSDT"].find("0x03F8,             // Range Minimum"), std::string::npos)
      << dsl["DSDT"];
  EXPECT_NE(dsl["DSDT"].find("IRQNoFlags ()\n                    {4}"), std::string::npos)
      << dsl["DSDT"];
  EXPECT_NE(dsl["FACP"].find("Hardware Reduced (V5) : 1"), std::string::npos);
  EXPECT_NE(dsl["FACP"].find("Address : 0000000000000CF9"), std::string::npos);
  EXPECT_NE(dsl["SLIT"].find("Locality   2 : 1E 14 0A 14"), std::string::npos) << dsl["SLIT"];
  EXPECT_NE(dsl["SRAT"].find("Proximity Domain Low(8) : 03"), std::string::npos);
  EXPECT_NE(dsl["SRAT"].find("Base Address : 000000000C000000"), std::string::npos) << dsl["SRAT"];
  EXPECT_NE(dsl["APIC"].find("Local Apic ID : 07"), std::string::npos) << dsl["APIC"];
  const std::string rm = "rm -rf " + std::string(dir);
  ASSERT_EQ(system(rm.c_str()), 0);
}

}  // namespace
}  // namespace numavm
