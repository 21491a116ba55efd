#include "cli/migration_churn.h"

#include <algorithm>

#include "balancer/actuation/page_nodes.h"

namespace numavm {

MigrationChurn::MigrationChurn(const Topology& topology, const GuestMemory& memory,
                               RateLimiter* limiter, uint64_t page_bytes)
    : migrator_(0, page_bytes, limiter) {
  for (const NumaNode& n : topology.nodes) {
    if (n.memory_bytes > 0) nodes_.push_back(n.id);
  }
  for (const GuestRegion& r : memory.regions()) {
    for (uint64_t off = 0; off < r.bytes; off += page_bytes) {
      pages_.push_back(r.host() + off);
    }
  }
}

void MigrationChurn::MoveUnmapped(const std::vector<GuestRamRegion>& ram, AliasProcess* alias) {
  absl::StatusOr<std::unique_ptr<UnmappedMoves>> u = UnmappedMoves::Create(ram, alias);
  if (!u.ok()) return;
  unmapped_ = *std::move(u);
  migrator_.set_staging(unmapped_.get());
}

bool MigrationChurn::MoveProtected(const std::vector<GuestRamRegion>& ram, MoveFence* fence,
                                   std::vector<ProtectedMoves::Range> kept) {
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> p = ProtectedMoves::Create(ram, fence);
  if (!p.ok()) return false;
  protected_ = *std::move(p);
  protected_->set_kept(kept);
  std::erase_if(pages_, [&kept](const void* p) {
    const auto* at = static_cast<const uint8_t*>(p);
    return std::any_of(kept.begin(), kept.end(), [at](const ProtectedMoves::Range& k) {
      return at >= k.start && at < k.start + k.bytes;
    });
  });
  unmapped_.reset();
  migrator_.set_staging(protected_.get());
  return true;
}

void MigrationChurn::Step(absl::Duration now) {
  if (!possible()) return;
  const int to = nodes_[step_++ % nodes_.size()];
  // Only pages that exist and are elsewhere: the guest never touched most
  // of its RAM, and those pages have nothing to move.
  absl::StatusOr<std::vector<int>> where = QueryNodesOf(0, pages_);
  if (!where.ok()) {
    ++failed_;
    return;
  }
  std::vector<PageMove> moves;
  for (size_t i = 0; i < pages_.size(); ++i) {
    if ((*where)[i] >= 0 && (*where)[i] != to) {
      moves.push_back({reinterpret_cast<uintptr_t>(pages_[i]), to});
    }
  }
  if (moves.empty()) return;
  absl::StatusOr<MigrationOutcome> out = migrator_.Migrate(moves, now);
  if (!out.ok()) {
    ++failed_;
    return;
  }
  moved_ += out->moved;
  moved_unmapped_ += out->moved_unmapped;
  failed_ += out->failed + out->no_memory;
}

}  // namespace numavm
