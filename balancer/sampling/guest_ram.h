// Guest RAM as the samplers see it: plain descriptions, so that balancer/
// does not depend on vmm/.
#ifndef NUMAVM_BALANCER_SAMPLING_GUEST_RAM_H_
#define NUMAVM_BALANCER_SAMPLING_GUEST_RAM_H_

#include <cstdint>
#include <vector>

#include "balancer/sampling/scan_window.h"

namespace numavm {

inline constexpr uint64_t kGuestPageBytes = 4096;

struct GuestRamRegion {
  uint32_t slot = 0;  // KVM memory slot
  uint64_t gpa = 0;   // guest-physical start
  uint64_t bytes = 0;
  uint8_t* host = nullptr;                // host mapping
  uint64_t page_bytes = kGuestPageBytes;  // backing page size (2 MiB: hugetlb, THP)
  bool shared_file = false;               // memfd or hugetlbfs (page cache backed)
  int fd = -1;                            // that file (not owned), -1 if anonymous
  uint64_t file_offset = 0;               // of `host` in the file

  uint64_t first_gfn() const { return gpa / kGuestPageBytes; }
  uint64_t pages() const { return bytes / kGuestPageBytes; }
};

// The regions as gfn ranges, for a ScanWindow.
std::vector<GfnRange> GfnRanges(const std::vector<GuestRamRegion>& ram);

// The region holding `gfn`, or nullptr.
const GuestRamRegion* RegionOfGfn(const std::vector<GuestRamRegion>& ram, uint64_t gfn);

// Whether any page of `range` (gfns) is in memory now, by mincore(2) of
// its backing: memory the guest never touched, or gave back, is not (a
// memfd's page counts while it is in the page cache, mapped or not). True
// where mincore cannot tell.
bool AnyResident(const std::vector<GuestRamRegion>& ram, const GfnRange& range);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_GUEST_RAM_H_
