// ACPI tables for a Linux guest of the bundled VMM: RSDP, XSDT, a
// hardware-reduced FADT (reset and sleep registers on I/O ports the VMM
// handles, so that `reboot` and `poweroff` end the VM), a DSDT that says
// only how to enter S5, a MADT (a local APIC per vCPU, the IOAPIC and the
// PICs of KVM's in-kernel irqchip, the timer's override) and, with two or
// more guest NUMA cells, SRAT (each cell's memory and vCPUs) and SLIT (the
// distances between cells). Pure: bytes to copy into guest memory at a
// given guest-physical address; no KVM.
#ifndef NUMAVM_VMM_ACPI_TABLES_H_
#define NUMAVM_VMM_ACPI_TABLES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace numavm {

// Where the VMM listens for the guest's reset and power-off writes.
inline constexpr uint16_t kAcpiResetPort = 0xcf9;  // write kAcpiResetValue: reset
inline constexpr uint8_t kAcpiResetValue = 0x06;
inline constexpr uint16_t kAcpiSleepControlPort = 0x600;  // SLP_EN | SLP_TYP << 2
inline constexpr uint16_t kAcpiSleepStatusPort = 0x601;
inline constexpr uint8_t kAcpiSleepEnable = 0x20;
inline constexpr uint8_t kAcpiS5SleepType = 5;  // as the DSDT's \_S5 says
inline constexpr uint64_t kLocalApicAddress = 0xfee00000;
inline constexpr uint64_t kIoApicAddress = 0xfec00000;

struct AcpiCell {
  uint64_t base = 0;  // guest-physical
  uint64_t bytes = 0;
  std::vector<int> vcpus;
};

struct AcpiConfig {
  int vcpus = 1;
  // Guest NUMA cells; with fewer than two there is no SRAT and no SLIT.
  std::vector<AcpiCell> cells;
  // cells x cells, 10 on the diagonal, 11-254 elsewhere (255: unreachable);
  // empty: 10 local, 20 remote.
  std::vector<std::vector<int>> distances;
  uint64_t address = 0;  // guest-physical address of the tables, 16-aligned
};

struct AcpiTables {
  std::vector<uint8_t> bytes;  // to copy to `address`; the RSDP comes first
  uint64_t rsdp_address = 0;
  // Each table by signature ("XSDT", "FACP", ...) and its offset in `bytes`.
  std::vector<std::pair<std::string, uint64_t>> tables;
};

absl::StatusOr<AcpiTables> BuildAcpiTables(const AcpiConfig& config);

// The byte sum of `bytes` modulo 256: zero for a table with a right checksum.
uint8_t AcpiByteSum(const uint8_t* bytes, size_t count);

}  // namespace numavm

#endif  // NUMAVM_VMM_ACPI_TABLES_H_
