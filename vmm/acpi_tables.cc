#include "vmm/acpi_tables.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

using Table = std::vector<uint8_t>;

constexpr size_t kHeaderBytes = 36;
constexpr size_t kFadtBytes = 276;  // ACPI 6.x
constexpr size_t kRsdpBytes = 36;

void Put(Table& t, size_t at, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) t[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

void Append(Table& t, uint64_t value, int bytes) {
  t.resize(t.size() + bytes);
  Put(t, t.size() - bytes, value, bytes);
}

void PutText(Table& t, size_t at, const char* text, size_t bytes) {
  std::memcpy(&t[at], text, bytes);
}

// The common header; Finish() sets its length and checksum.
Table Header(const char* signature, uint8_t revision) {
  Table t(kHeaderBytes, 0);
  PutText(t, 0, signature, 4);
  t[8] = revision;
  PutText(t, 10, "NUMAVM", 6);
  PutText(t, 16, "NUMAVM  ", 8);
  Put(t, 24, 1, 4);  // OEM revision
  PutText(t, 28, "NMVM", 4);
  Put(t, 32, 1, 4);  // creator revision
  return t;
}

void Finish(Table& t) {
  Put(t, 4, t.size(), 4);
  t[9] = 0;
  t[9] = static_cast<uint8_t>(-AcpiByteSum(t.data(), t.size()));
}

// A Generic Address Structure for a byte-wide I/O port.
void PutIoPort(Table& t, size_t at, uint16_t port) {
  t[at] = 1;      // system I/O space
  t[at + 1] = 8;  // bit width
  t[at + 2] = 0;  // bit offset
  t[at + 3] = 1;  // byte access
  Put(t, at + 4, port, 8);
}

// The DSDT in AML, assembled by hand:
//   Name (_S5, Package (2) { 5, 5 })  - SLP_TYPa and SLP_TYPb for poweroff
//   Scope (\_SB) { Device (COM1) {    - the serial port as an ACPI device:
//     Name (_HID, EisaId ("PNP0501"))    a hardware-reduced guest has no
//     Name (_UID, Zero)                  legacy ISA IRQs, so its IRQ 4 must
//     Name (_CRS, ResourceTemplate () {  be described to be routed
//       IO (Decode16, 0x3F8, 0x3F8, 0x00, 0x08)
//       IRQNoFlags () {4} }) } }
Table Dsdt() {
  Table t = Header("DSDT", 2);
  const uint8_t aml[] = {0x08, '_', 'S', '5', '_', 0x12, 0x06, 0x02, 0x0a, kAcpiS5SleepType, 0x0a,
                         kAcpiS5SleepType,
                         // Scope (\_SB), 0x33 bytes
                         0x10, 0x33, '\\', '_', 'S', 'B', '_',
                         // Device (COM1), 0x2b bytes
                         0x5b, 0x82, 0x2b, 'C', 'O', 'M', '1',
                         // _HID: EisaId ("PNP0501")
                         0x08, '_', 'H', 'I', 'D', 0x0c, 0x41, 0xd0, 0x05, 0x01,
                         // _UID: Zero
                         0x08, '_', 'U', 'I', 'D', 0x00,
                         // _CRS: a 13-byte buffer
                         0x08, '_', 'C', 'R', 'S', 0x11, 0x10, 0x0a, 0x0d, 0x47, 0x01, 0xf8, 0x03,
                         0xf8, 0x03, 0x00, 0x08,  // I/O 0x3f8-0x3ff
                         0x22, 0x10, 0x00,        // IRQ 4
                         0x79, 0x00};             // end tag
  t.insert(t.end(), std::begin(aml), std::end(aml));
  Finish(t);
  return t;
}

Table Fadt(uint64_t dsdt) {
  Table t = Header("FACP", 6);
  t.resize(kFadtBytes, 0);
  Put(t, 40, dsdt, 4);
  // IAPC_BOOT_ARCH: no VGA (bit 2), MSI not supported (bit 3: no PCI), no
  // CMOS RTC (bit 5); no 8042 (bit 1 clear), no legacy devices (bit 0).
  Put(t, 109, (1u << 2) | (1u << 3) | (1u << 5), 2);
  // Flags: WBINVD (0), RESET_REG_SUP (10), HW_REDUCED_ACPI (20).
  Put(t, 112, (1u << 0) | (1u << 10) | (1u << 20), 4);
  PutIoPort(t, 116, kAcpiResetPort);
  t[128] = kAcpiResetValue;
  t[131] = 0;  // FADT minor version: ACPI 6.0
  Put(t, 140, dsdt, 8);
  PutIoPort(t, 244, kAcpiSleepControlPort);
  PutIoPort(t, 256, kAcpiSleepStatusPort);
  PutText(t, 268, "NUMAVM\0\0", 8);
  Finish(t);
  return t;
}

Table Madt(int vcpus) {
  Table t = Header("APIC", 5);
  Append(t, kLocalApicAddress, 4);
  Append(t, 1, 4);  // PCAT_COMPAT: the irqchip has the 8259 PICs too
  for (int v = 0; v < vcpus; ++v) {
    // Processor local APIC: UID and APIC id v, enabled.
    Append(t, 0, 1);
    Append(t, 8, 1);
    Append(t, v, 1);
    Append(t, v, 1);
    Append(t, 1, 4);
  }
  // The IOAPIC (id 0, as KVM's starts), GSIs from 0.
  Append(t, 1, 1);
  Append(t, 12, 1);
  Append(t, 0, 1);
  Append(t, 0, 1);
  Append(t, kIoApicAddress, 4);
  Append(t, 0, 4);
  // ISA IRQ 0 (the PIT) arrives on GSI 2, as on PC hardware.
  Append(t, 2, 1);
  Append(t, 10, 1);
  Append(t, 0, 1);  // ISA bus
  Append(t, 0, 1);  // IRQ 0
  Append(t, 2, 4);  // GSI 2
  Append(t, 0, 2);  // conforming polarity and trigger
  // Local APIC NMI on LINT1 of every processor.
  Append(t, 4, 1);
  Append(t, 6, 1);
  Append(t, 0xff, 1);
  Append(t, 0, 2);
  Append(t, 1, 1);
  Finish(t);
  return t;
}

Table Srat(const AcpiConfig& config) {
  Table t = Header("SRAT", 3);
  Append(t, 1, 4);  // reserved, 1 for backward compatibility
  Append(t, 0, 8);
  for (size_t c = 0; c < config.cells.size(); ++c) {
    for (int v : config.cells[c].vcpus) {
      // Processor local APIC affinity.
      Append(t, 0, 1);
      Append(t, 16, 1);
      Append(t, c & 0xff, 1);  // proximity domain [7:0]
      Append(t, v, 1);         // APIC id
      Append(t, 1, 4);         // enabled
      Append(t, 0, 1);         // local SAPIC EID
      Append(t, c >> 8, 3);    // proximity domain [31:8]
      Append(t, 0, 4);         // clock domain
    }
  }
  for (size_t c = 0; c < config.cells.size(); ++c) {
    // Memory affinity.
    Append(t, 1, 1);
    Append(t, 40, 1);
    Append(t, c, 4);
    Append(t, 0, 2);
    Append(t, config.cells[c].base, 8);
    Append(t, config.cells[c].bytes, 8);
    Append(t, 0, 4);
    Append(t, 1, 4);  // enabled
    Append(t, 0, 8);
  }
  Finish(t);
  return t;
}

Table Slit(const std::vector<std::vector<int>>& distances) {
  Table t = Header("SLIT", 1);
  Append(t, distances.size(), 8);
  for (const auto& row : distances) {
    for (int d : row) Append(t, d, 1);
  }
  Finish(t);
  return t;
}

absl::Status Check(const AcpiConfig& config, std::vector<std::vector<int>>& distances) {
  if (config.vcpus < 1 || config.vcpus > 254) {
    return absl::InvalidArgumentError(
        absl::StrCat("ACPI tables: ", config.vcpus, " vCPUs (want 1-254: xAPIC ids)"));
  }
  if (config.address % 16 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ACPI tables: address 0x", absl::Hex(config.address), " is not 16-aligned"));
  }
  const size_t cells = config.cells.size();
  if (cells < 2) return absl::OkStatus();
  std::vector<int> cell_of(config.vcpus, -1);
  for (size_t c = 0; c < cells; ++c) {
    if (config.cells[c].bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat("ACPI tables: cell ", c, " has no memory"));
    }
    for (int v : config.cells[c].vcpus) {
      if (v < 0 || v >= config.vcpus || cell_of[v] >= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("ACPI tables: cell ", c, " names vCPU ", v,
                         v < 0 || v >= config.vcpus ? " that does not exist" : " of another cell"));
      }
      cell_of[v] = static_cast<int>(c);
    }
  }
  for (int v = 0; v < config.vcpus; ++v) {
    if (cell_of[v] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("ACPI tables: vCPU ", v, " is in no cell"));
    }
  }
  if (distances.empty()) {
    distances.assign(cells, std::vector<int>(cells, 20));
    for (size_t c = 0; c < cells; ++c) distances[c][c] = 10;
  }
  if (distances.size() != cells) {
    return absl::InvalidArgumentError(absl::StrCat("ACPI tables: ", distances.size(),
                                                   " rows of distances for ", cells, " cells"));
  }
  for (size_t a = 0; a < cells; ++a) {
    if (distances[a].size() != cells) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ACPI tables: distance row ", a, " has ", distances[a].size(), " entries, want ", cells));
    }
    for (size_t b = 0; b < cells; ++b) {
      const int d = distances[a][b];
      if (a == b ? d != 10 : (d < 11 || d > 255)) {
        return absl::InvalidArgumentError(
            absl::StrCat("ACPI tables: distance ", a, "->", b, " is ", d,
                         a == b ? " (a cell's own is 10)" : " (want 11-254, or 255)"));
      }
    }
  }
  return absl::OkStatus();
}

uint64_t Align16(uint64_t v) { return (v + 15) / 16 * 16; }

}  // namespace

uint8_t AcpiByteSum(const uint8_t* bytes, size_t count) {
  uint8_t sum = 0;
  for (size_t i = 0; i < count; ++i) sum = static_cast<uint8_t>(sum + bytes[i]);
  return sum;
}

absl::StatusOr<AcpiTables> BuildAcpiTables(const AcpiConfig& config) {
  std::vector<std::vector<int>> distances = config.distances;
  if (absl::Status s = Check(config, distances); !s.ok()) return s;

  // Tables that name no address first; then where each goes, the RSDP at
  // the start; then the tables that point at others.
  std::vector<std::pair<std::string, Table>> tables;
  tables.emplace_back("DSDT", Dsdt());
  tables.emplace_back("FACP", Table(kFadtBytes));  // placeholder: same size
  tables.emplace_back("APIC", Madt(config.vcpus));
  if (config.cells.size() >= 2) {
    tables.emplace_back("SRAT", Srat(config));
    tables.emplace_back("SLIT", Slit(distances));
  }
  const size_t pointed = tables.size() - 1;  // all but the DSDT (the FADT's)
  tables.emplace_back("XSDT", Table(kHeaderBytes + 8 * pointed));

  AcpiTables out;
  std::vector<uint64_t> offsets;
  uint64_t at = Align16(kRsdpBytes);
  for (const auto& [name, table] : tables) {
    offsets.push_back(at);
    out.tables.emplace_back(name, at);
    at = Align16(at + table.size());
  }
  tables[1].second = Fadt(config.address + offsets[0]);
  Table xsdt = Header("XSDT", 1);
  for (size_t i = 1; i + 1 < tables.size(); ++i) Append(xsdt, config.address + offsets[i], 8);
  Finish(xsdt);
  tables.back().second = std::move(xsdt);

  Table rsdp(kRsdpBytes, 0);
  PutText(rsdp, 0, "RSD PTR ", 8);
  PutText(rsdp, 9, "NUMAVM", 6);
  rsdp[15] = 2;  // revision: ACPI 2.0+, the XSDT
  Put(rsdp, 20, kRsdpBytes, 4);
  Put(rsdp, 24, config.address + offsets.back(), 8);
  rsdp[8] = static_cast<uint8_t>(-AcpiByteSum(rsdp.data(), 20));
  rsdp[32] = static_cast<uint8_t>(-AcpiByteSum(rsdp.data(), kRsdpBytes));

  out.bytes.assign(at, 0);
  std::memcpy(out.bytes.data(), rsdp.data(), rsdp.size());
  for (size_t i = 0; i < tables.size(); ++i) {
    std::memcpy(out.bytes.data() + offsets[i], tables[i].second.data(), tables[i].second.size());
  }
  out.rsdp_address = config.address;
  return out;
}

}  // namespace numavm
