// The BIOS memory map (e820) a Linux guest reads from its zero page: guest
// RAM with the ranges the VMM keeps for itself or for the firmware's
// tables cut out. Pure.
#ifndef NUMAVM_VMM_E820_H_
#define NUMAVM_VMM_E820_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace numavm {

enum E820Type : uint32_t { kE820Ram = 1, kE820Reserved = 2, kE820Acpi = 3 };

struct E820Entry {
  uint64_t address = 0;
  uint64_t bytes = 0;
  uint32_t type = kE820Ram;
  friend bool operator==(const E820Entry&, const E820Entry&) = default;
};

// The zero page holds at most this many entries.
inline constexpr size_t kMaxE820Entries = 128;

// RAM [0, ram_bytes) less `reserved` (entries of any type but RAM, inside
// RAM or past it, e.g. MMIO), sorted by address, neighbours of one type
// merged. Reserved ranges that overlap one another are an error.
absl::StatusOr<std::vector<E820Entry>> BuildE820(uint64_t ram_bytes,
                                                 std::vector<E820Entry> reserved);

}  // namespace numavm

#endif  // NUMAVM_VMM_E820_H_
