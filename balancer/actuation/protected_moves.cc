#include "balancer/actuation/protected_moves.h"

#include <numaif.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace numavm {
namespace {
constexpr int kGuestProtection = PROT_READ | PROT_WRITE;
}  // namespace

absl::Status CheckMovesUnderProtNone() {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* p = ::mmap(nullptr, page, kGuestProtection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return ErrnoStatus(errno, "mmap");
  std::memset(p, 1, page);
  int status = -1;
  absl::Status out = absl::OkStatus();
  if (::mprotect(p, page, PROT_NONE) != 0) {
    out = ErrnoStatus(errno, "mprotect");
  } else if (move_pages(0, 1, &p, nullptr, &status, 0) != 0) {
    out = ErrnoStatus(errno, "move_pages");
  } else if (status < 0) {
    out = absl::FailedPreconditionError(
        absl::StrCat("this kernel's move_pages does not see pages under PROT_NONE (",
                     std::strerror(-status), "; Linux 6.5 and later do)"));
  }
  ::munmap(p, page);
  return out;
}

absl::StatusOr<std::unique_ptr<ProtectedMoves>> ProtectedMoves::Create(
    const std::vector<GuestRamRegion>& ram, MoveFence* fence) {
  if (fence == nullptr) return absl::FailedPreconditionError("no move fence");
  if (absl::Status s = CheckMovesUnderProtNone(); !s.ok()) return s;
  return std::unique_ptr<ProtectedMoves>(new ProtectedMoves(ram, fence));
}

const GuestRamRegion* ProtectedMoves::RegionOf(const uint8_t* host) const {
  for (const GuestRamRegion& r : ram_) {
    if (host >= r.host && host < r.host + r.bytes) return &r;
  }
  return nullptr;
}

StagedPages ProtectedMoves::Stage(const std::vector<void*>& pages) {
  staged_.clear();
  // The batch's runs, each widened to whole backing pages of its region
  // (hugetlbfs: mprotect takes whole huge pages); every page must be in
  // the regions, or the batch moves as it is.
  for (void* p : pages) {
    uint8_t* at = static_cast<uint8_t*>(p);
    const GuestRamRegion* r = RegionOf(at);
    if (r == nullptr) return {};
    for (const Range& k : kept_) {
      if (at >= k.start && at < k.start + k.bytes) {
        staged_.clear();
        return {};
      }
    }
    const uint64_t offset = static_cast<uint64_t>(at - r->host);
    uint8_t* start = r->host + offset / r->page_bytes * r->page_bytes;
    uint8_t* end = std::min(start + r->page_bytes, r->host + r->bytes);
    if (!staged_.empty() && start >= staged_.back().start &&
        start <= staged_.back().start + staged_.back().bytes &&
        RegionOf(staged_.back().start) == r) {
      Run& last = staged_.back();
      last.bytes = std::max<uint64_t>(last.bytes, static_cast<uint64_t>(end - last.start));
    } else {
      staged_.push_back({start, static_cast<uint64_t>(end - start)});
    }
  }
  fence_->Raise();
  raised_ = true;
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (::mprotect(staged_[i].start, staged_[i].bytes, PROT_NONE) != 0) {
      // Nothing lost: the runs taken so far come back, the batch moves as
      // it is.
      Restore(i);
      staged_.clear();
      raised_ = false;
      fence_->Lower();
      return {};
    }
  }
  ++windows_;
  runs_ += staged_.size();
  StagedPages out;
  out.in_place = true;
  return out;
}

void ProtectedMoves::Restore(size_t count) {
  for (size_t i = 0; i < count; ++i) {
    // Giving a run back merges the mappings its PROT_NONE split; should it
    // fail anyway (ENOMEM), try again rather than leave the guest a hole.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (::mprotect(staged_[i].start, staged_[i].bytes, kGuestProtection) == 0) break;
    }
  }
}

void ProtectedMoves::Unstage() {
  if (!raised_) return;
  Restore(staged_.size());
  staged_.clear();
  raised_ = false;
  fence_->Lower();
}

}  // namespace numavm
