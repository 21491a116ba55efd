// ELF64 x86-64 payloads: validated, then copied into guest memory.
#ifndef NUMAVM_VMM_ELF_PAYLOAD_H_
#define NUMAVM_VMM_ELF_PAYLOAD_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/guest_address.h"
#include "vmm/guest_memory.h"

namespace numavm {

struct ElfSegment {
  GuestAddress address;
  uint64_t file_offset = 0;
  uint64_t file_bytes = 0;
  uint64_t memory_bytes = 0;
};

struct ElfPayload {
  std::string name;
  GuestAddress entry;
  std::vector<ElfSegment> segments;
  std::vector<uint8_t> image;
};

// Validates `image` as a payload the VMM can boot: ELF64, little-endian,
// x86-64, executable, every loadable segment inside the payload window.
// `name` labels errors.
absl::StatusOr<ElfPayload> ParseElfPayload(std::string name, std::vector<uint8_t> image);

// Reads and validates the payload file at `path`.
absl::StatusOr<ElfPayload> ReadElfPayload(const std::string& path);

// Copies the segments into guest memory and zeroes their .bss.
absl::Status LoadElfPayload(const ElfPayload& payload, GuestMemory& memory);

}  // namespace numavm

#endif  // NUMAVM_VMM_ELF_PAYLOAD_H_
