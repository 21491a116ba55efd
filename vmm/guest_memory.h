// Guest RAM: one or more regions (one per guest NUMA cell), each its own host
// mapping and KVM memory slot, contiguous in guest-physical space from 0.
#ifndef NUMAVM_VMM_GUEST_MEMORY_H_
#define NUMAVM_VMM_GUEST_MEMORY_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/backing.h"
#include "vmm/guest_address.h"

namespace numavm {

struct GuestRegion {
  GuestAddress start;
  uint64_t bytes = 0;
  BackedMapping backing;

  uint8_t* host() const { return backing.mapping.data(); }
  bool Contains(GuestAddress a) const {
    return a.value >= start.value && a.value - start.value < bytes;
  }
};

class GuestMemory final {
 public:
  // Regions of `region_bytes[i]` each, laid out back to back from gpa 0.
  [[nodiscard]] static absl::StatusOr<GuestMemory> Create(Backing backing,
                                                          std::span<const uint64_t> region_bytes);

  GuestMemory(GuestMemory&&) = default;
  GuestMemory& operator=(GuestMemory&&) = default;

  Backing backing() const { return backing_; }
  uint64_t total_bytes() const { return total_bytes_; }
  const std::vector<GuestRegion>& regions() const { return regions_; }

  // Host pointer for [gpa, gpa + bytes), or nullptr when the range is not
  // inside one region. Guest-supplied ranges must go through here.
  uint8_t* HostPointer(GuestAddress gpa, uint64_t bytes) const;

  template <typename T>
  T* As(GuestAddress gpa) const {
    return reinterpret_cast<T*>(HostPointer(gpa, sizeof(T)));
  }

 private:
  GuestMemory(Backing backing, std::vector<GuestRegion> regions, uint64_t total)
      : backing_(backing), regions_(std::move(regions)), total_bytes_(total) {}
  Backing backing_;
  std::vector<GuestRegion> regions_;
  uint64_t total_bytes_;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_GUEST_MEMORY_H_
