#include "balancer/actuation/unmapped_moves.h"

#include <sys/mman.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

namespace numavm {

absl::StatusOr<std::unique_ptr<UnmappedMoves>> UnmappedMoves::Create(
    const std::vector<GuestRamRegion>& ram) {
  std::vector<Alias> aliases;
  auto unmap_all = [&aliases] {
    for (const Alias& a : aliases) ::munmap(a.alias, a.bytes);
  };
  for (const GuestRamRegion& r : ram) {
    if (!r.shared_file || r.fd < 0) {
      unmap_all();
      return absl::FailedPreconditionError(
          "guest memory is not in a shared file: pages move where they are mapped");
    }
    void* alias =
        ::mmap(nullptr, r.bytes, PROT_READ, MAP_SHARED, r.fd, static_cast<off_t>(r.file_offset));
    if (alias == MAP_FAILED) {
      absl::Status s = ErrnoStatus(errno, "mmap of guest memory for unmapped page moves");
      unmap_all();
      return s;
    }
    aliases.push_back(Alias{r.host, r.bytes, r.page_bytes, static_cast<uint8_t*>(alias)});
  }
  return std::unique_ptr<UnmappedMoves>(new UnmappedMoves(std::move(aliases)));
}

UnmappedMoves::~UnmappedMoves() {
  for (const Alias& a : aliases_) ::munmap(a.alias, a.bytes);
}

const UnmappedMoves::Alias* UnmappedMoves::AliasOf(const uint8_t* guest) const {
  for (const Alias& a : aliases_) {
    if (guest >= a.guest && guest < a.guest + a.bytes) return &a;
  }
  return nullptr;
}

std::vector<void*> UnmappedMoves::Stage(const std::vector<void*>& pages) {
  staged_.clear();
  std::vector<void*> at;
  at.reserve(pages.size());
  // Runs of pages that follow each other in the guest's mapping (a region's
  // pages come in order); every page must have an alias, or the batch
  // moves as it is.
  for (void* p : pages) {
    uint8_t* guest = static_cast<uint8_t*>(p);
    const Alias* a = AliasOf(guest);
    if (a == nullptr) {
      staged_.clear();
      return {};
    }
    uint8_t* alias = a->alias + (guest - a->guest);
    at.push_back(alias);
    if (!staged_.empty() && staged_.back().guest + staged_.back().bytes == guest &&
        AliasOf(staged_.back().guest) == a) {
      staged_.back().bytes += a->page_bytes;
    } else {
      staged_.push_back(Run{guest, alias, a->page_bytes});
    }
  }
  for (size_t i = 0; i < staged_.size(); ++i) {
    const Run& run = staged_[i];
    // One invalidation for the run: KVM drops its mappings of it at once.
    bool ok = ::madvise(run.guest, run.bytes, MADV_DONTNEED) == 0;
    // move_pages names pages by mapped address: map the run in the alias.
    if (ok && ::madvise(run.alias, run.bytes, MADV_POPULATE_READ) != 0) {
      if (errno == EINVAL) {  // a kernel before 5.14: touch each page
        const uint64_t step = AliasOf(run.guest)->page_bytes;
        for (uint64_t off = 0; off < run.bytes; off += step) {
          (void)*static_cast<volatile const uint8_t*>(run.alias + off);
        }
      } else {
        ok = false;
      }
    }
    if (!ok) {
      // Nothing lost: the runs zapped so far get their mappings back, and
      // the batch moves as it is.
      staged_.resize(i + 1);
      Unstage();
      return {};
    }
  }
  runs_total_ += staged_.size();
  return at;
}

void UnmappedMoves::Unstage() {
  for (const Run& run : staged_) {
    ::madvise(run.alias, run.bytes, MADV_DONTNEED);
    if (remap_) remap_(run.guest, run.bytes);
  }
  staged_.clear();
}

}  // namespace numavm
