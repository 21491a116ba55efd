#include "balancer/sampling/guest_ram.h"

#include <sys/mman.h>

#include <algorithm>
#include <vector>

namespace numavm {

std::vector<GfnRange> GfnRanges(const std::vector<GuestRamRegion>& ram) {
  std::vector<GfnRange> out;
  for (const GuestRamRegion& r : ram) out.push_back(GfnRange{r.first_gfn(), r.pages()});
  return out;
}

const GuestRamRegion* RegionOfGfn(const std::vector<GuestRamRegion>& ram, uint64_t gfn) {
  for (const GuestRamRegion& r : ram) {
    if (gfn >= r.first_gfn() && gfn - r.first_gfn() < r.pages()) return &r;
  }
  return nullptr;
}

bool AnyResident(const std::vector<GuestRamRegion>& ram, const GfnRange& range) {
  // A 2 MiB region at a time on the stack; longer ranges in such steps.
  constexpr uint64_t kStep = 512;
  unsigned char vec[kStep];
  for (const GuestRamRegion& r : ram) {
    const uint64_t first = std::max(range.first, r.first_gfn());
    const uint64_t end = std::min(range.end(), r.first_gfn() + r.pages());
    for (uint64_t g = first; g < end; g += kStep) {
      const uint64_t count = std::min(kStep, end - g);
      uint8_t* host = r.host + (g - r.first_gfn()) * kGuestPageBytes;
      if (::mincore(host, count * kGuestPageBytes, vec) != 0) return true;
      if (std::any_of(vec, vec + count, [](unsigned char v) { return v & 1; })) return true;
    }
  }
  return false;
}

}  // namespace numavm
