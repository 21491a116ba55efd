#include "vmm/guest_memory.h"

#include "absl/strings/str_cat.h"

namespace numavm {

absl::StatusOr<GuestMemory> GuestMemory::Create(Backing backing,
                                                std::span<const uint64_t> region_bytes) {
  std::vector<GuestRegion> regions;
  uint64_t next = 0;
  const uint64_t align = BackingAlignment(backing);
  for (size_t i = 0; i < region_bytes.size(); ++i) {
    uint64_t bytes = region_bytes[i];
    if (bytes == 0 || bytes % align != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "guest memory region ", i, " has ", bytes, " bytes; it must be a non-zero multiple of ",
          align, " for --backing=", BackingName(backing)));
    }
    absl::StatusOr<BackedMapping> m =
        CreateBacking(backing, bytes, absl::StrCat("numavm-guest-cell", i));
    if (!m.ok()) return m.status();
    regions.push_back(GuestRegion{GuestAddress{next}, bytes, *std::move(m)});
    next += bytes;
  }
  return GuestMemory(backing, std::move(regions), next);
}

uint8_t* GuestMemory::HostPointer(GuestAddress gpa, uint64_t bytes) const {
  for (const GuestRegion& r : regions_) {
    if (!r.Contains(gpa)) continue;
    uint64_t offset = gpa.value - r.start.value;
    if (bytes > r.bytes - offset) return nullptr;
    return r.host() + offset;
  }
  return nullptr;
}

}  // namespace numavm
