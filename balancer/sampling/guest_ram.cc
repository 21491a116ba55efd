#include "balancer/sampling/guest_ram.h"

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

}  // namespace numavm
