#include "balancer/actuation/unmapped_moves.h"

#include <sys/mman.h>

namespace numavm {

absl::StatusOr<std::unique_ptr<UnmappedMoves>> UnmappedMoves::Create(
    const std::vector<GuestRamRegion>& ram, AliasProcess* alias) {
  if (alias == nullptr) return absl::FailedPreconditionError("no alias process");
  std::vector<Region> regions;
  for (const GuestRamRegion& r : ram) {
    if (!r.shared_file || r.fd < 0) {
      return absl::FailedPreconditionError(
          "guest memory is not in a shared file: pages move where they are mapped");
    }
    absl::StatusOr<uint8_t*> at = alias->Map(r.fd, r.file_offset, r.bytes, r.host);
    if (!at.ok()) return at.status();
    regions.push_back(Region{r.host, r.bytes, r.page_bytes, *at});
  }
  return std::unique_ptr<UnmappedMoves>(new UnmappedMoves(std::move(regions), alias));
}

const UnmappedMoves::Region* UnmappedMoves::RegionOf(const uint8_t* guest) const {
  for (const Region& r : regions_) {
    if (guest >= r.guest && guest < r.guest + r.bytes) return &r;
  }
  return nullptr;
}

StagedPages UnmappedMoves::Stage(const std::vector<void*>& pages) {
  staged_.clear();
  staged_alias_.clear();
  // Without the child the guest's mappings would be dropped for nothing.
  if (!alias_->alive()) return {};
  StagedPages out{alias_->pid(), {}};
  out.at.reserve(pages.size());
  // Runs of pages that follow each other in the guest's mapping (a region's
  // pages come in order); every page must be in the regions, or the batch
  // moves as it is.
  const Region* last = nullptr;
  for (void* p : pages) {
    uint8_t* guest = static_cast<uint8_t*>(p);
    const Region* r = RegionOf(guest);
    if (r == nullptr) {
      staged_.clear();
      staged_alias_.clear();
      return {};
    }
    uint8_t* alias = r->alias + (guest - r->guest);
    out.at.push_back(alias);
    if (!staged_.empty() && r == last && staged_.back().start + staged_.back().bytes == guest) {
      staged_.back().bytes += r->page_bytes;
      staged_alias_.back().bytes += r->page_bytes;
    } else {
      staged_.push_back({guest, r->page_bytes});
      staged_alias_.push_back({alias, r->page_bytes});
    }
    last = r;
  }
  // One invalidation a run: KVM and the vCPUs' TLBs drop it at once.
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (::madvise(staged_[i].start, staged_[i].bytes, MADV_DONTNEED) != 0) {
      // Nothing lost: the runs zapped so far get their mappings back, and
      // the batch moves as it is.
      staged_.resize(i);
      staged_alias_.resize(i);
      Unstage();
      return {};
    }
  }
  // move_pages names pages by mapped address: the child maps the runs.
  if (!alias_->Populate(staged_alias_).ok()) {
    Unstage();
    return {};
  }
  runs_total_ += staged_.size();
  return out;
}

void UnmappedMoves::Unstage() {
  // A child that cannot drop them keeps them mapped; its end drops them.
  (void)alias_->Drop(staged_alias_);
  if (remap_) {
    for (const AliasProcess::Range& run : staged_) remap_(run.start, run.bytes);
  }
  staged_.clear();
  staged_alias_.clear();
}

}  // namespace numavm
