#include "balancer/region_moves.h"

#include <algorithm>

namespace numavm {

void RegionMoves::Push(RegionState& state, const Unit& unit, uint64_t acceptable) {
  if (state.flags & RegionState::kQueued) return;
  state.flags |= RegionState::kQueued;
  queue_.push_back({unit, acceptable});
}

absl::StatusOr<RegionMovesOutcome> RegionMoves::Drain(const StateOf& state_of, PlacementView& view,
                                                      absl::Duration now,
                                                      const std::function<void(uint64_t)>& moved) {
  RegionMovesOutcome out;
  while (!queue_.empty()) {
    const Entry e = queue_.front();
    RegionState* r = state_of(e.unit);
    // Gone (merged), or changed its mind since: the samples decide again.
    if (r == nullptr || !r->settled()) {
      if (r != nullptr) r->flags &= static_cast<uint8_t>(~RegionState::kQueued);
      queue_.pop_front();
      continue;
    }
    const int to = r->node;
    uint64_t first = e.unit.region * kRegionPages;
    uint64_t count = kRegionPages;
    if (e.unit.sub >= 0) {
      first += static_cast<uint64_t>(e.unit.sub) * kSubRegionPages;
      count = kSubRegionPages;
    }
    const uint64_t end = std::min(pages_, first + count);
    std::vector<uint64_t> gfns;
    for (uint64_t g = first; g < end; g += page_pages_) gfns.push_back(g);
    absl::StatusOr<std::vector<int>> where = view.PageNodes(gfns);
    if (!where.ok()) return where.status();
    std::vector<std::pair<uint64_t, int>> moves;
    for (size_t i = 0; i < gfns.size(); ++i) {
      const int n = (*where)[i];
      if (n < 0 || n == to) continue;  // not resident, or there already
      if (n < 64 && ((e.acceptable >> n) & 1)) continue;
      moves.emplace_back(gfns[i], to);
    }
    if (!moves.empty()) {
      absl::StatusOr<MigrationOutcome> o = view.MovePages(moves, now);
      if (!o.ok()) return o.status();
      out.pages.moved += o->moved;
      out.pages.bytes_moved += o->bytes_moved;
      out.pages.moved_unmapped += o->moved_unmapped;
      out.pages.failed += o->failed;
      out.pages.no_memory += o->no_memory;
      out.pages.busy += o->busy;
      out.pages.deferred += o->deferred;
      // The limit is spent: the rest waits, this unit first (and is
      // accounted for when it is done).
      if (o->deferred > 0) break;
      for (const auto& m : moves) moved(m.first);
      // A full destination is the policy's to hear about (failures in the
      // counters); the unit is not retried until its samples say so again.
    }
    r->flags = static_cast<uint8_t>((r->flags & ~RegionState::kQueued) | RegionState::kPlaced);
    queue_.pop_front();
    if (!moves.empty()) ++out.regions_done;
  }
  return out;
}

}  // namespace numavm
