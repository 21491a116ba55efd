#include "balancer/sampling/cell_samples.h"

#include <algorithm>

namespace numavm {

CellSamples::CellSamples(std::vector<GuestCell> cells, int per_region)
    : cells_(std::move(cells)),
      per_region_(std::clamp<int>(per_region, 1, kRegionPages)),
      cursors_(cells_.size()) {}

AccessBatch CellSamples::Next(uint64_t regions, absl::Duration now) {
  uint64_t total = 0;
  for (const GuestCell& c : cells_) {
    if (!c.vcpus.empty()) total += c.pages;
  }
  AccessBatch batch;
  if (total == 0) return batch;
  for (size_t i = 0; i < cells_.size(); ++i) {
    const GuestCell& cell = cells_[i];
    if (cell.vcpus.empty() || cell.pages == 0) continue;
    Cursor& at = cursors_[i];
    const uint64_t cell_regions = (cell.pages + kRegionPages - 1) / kRegionPages;
    // Its share by size, at least one region, at most all of them.
    const uint64_t share = std::clamp<uint64_t>(
        static_cast<uint64_t>(static_cast<double>(regions) * cell.pages / total + 0.5), 1,
        cell_regions);
    for (uint64_t k = 0; k < share; ++k) {
      const uint64_t region = at.region;
      const uint64_t first = region * kRegionPages;
      const uint64_t in_region = std::min(kRegionPages, cell.pages - first);
      // Evenly spread pages, shifted by a different amount each sweep.
      const uint64_t stride = std::max<uint64_t>(1, in_region / per_region_);
      const uint64_t shift = (at.sweep * 37 + region * 13) % stride;
      for (int s = 0; s < per_region_ && static_cast<uint64_t>(s) < in_region; ++s) {
        const uint64_t page = first + (s * stride + shift) % in_region;
        batch.push_back(AccessSample{cell.first_page + page,
                                     cell.vcpus[at.vcpu++ % cell.vcpus.size()], AccessKind::kWrite,
                                     now});
      }
      if (++at.region == cell_regions) {
        at.region = 0;
        ++at.sweep;
      }
    }
  }
  return batch;
}

}  // namespace numavm
