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
  // Units at the front of the queue go to the view together, up to
  // kPagesPerCall pages, so that a migrator may share their batches between
  // threads (actuation/page_migrator.h).
  struct Taken {
    RegionState* state;
    size_t first_gfn, end_gfn;    // its pages in `gfns`
    size_t first_move, end_move;  // its moves in `moves`
  };
  while (!queue_.empty()) {
    std::vector<Taken> taken;
    std::vector<uint64_t> gfns;
    size_t front = 0;  // queue entries taken
    while (front < queue_.size() && gfns.size() < kPagesPerCall) {
      const Entry& e = queue_[front];
      RegionState* r = state_of(e.unit);
      // Gone (merged), or changed its mind since: the samples decide again.
      if (r == nullptr || !r->settled()) {
        if (r != nullptr) r->flags &= static_cast<uint8_t>(~RegionState::kQueued);
        queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(front));
        continue;
      }
      uint64_t first = e.unit.region * kRegionPages;
      uint64_t count = kRegionPages;
      if (e.unit.sub >= 0) {
        first += static_cast<uint64_t>(e.unit.sub) * kSubRegionPages;
        count = kSubRegionPages;
      }
      const uint64_t end = std::min(pages_, first + count);
      Taken t{r, gfns.size(), 0, 0, 0};
      for (uint64_t g = first; g < end; g += page_pages_) gfns.push_back(g);
      t.end_gfn = gfns.size();
      taken.push_back(t);
      ++front;
    }
    if (taken.empty()) break;
    absl::StatusOr<std::vector<int>> where = view.PageNodes(gfns);
    if (!where.ok()) return where.status();
    std::vector<std::pair<uint64_t, int>> moves;
    for (size_t k = 0; k < taken.size(); ++k) {
      Taken& t = taken[k];
      const int to = t.state->node;
      const uint64_t acceptable = queue_[k].acceptable;
      t.first_move = moves.size();
      for (size_t i = t.first_gfn; i < t.end_gfn; ++i) {
        const int n = (*where)[i];
        if (n < 0 || n == to) continue;  // not resident, or there already
        if (n < 64 && ((acceptable >> n) & 1)) continue;
        moves.emplace_back(gfns[i], to);
      }
      t.end_move = moves.size();
    }
    // The moves not attempted (over the limit, or the period's time spent)
    // are the last ones: the units they belong to wait, in order.
    size_t attempted = moves.size();
    if (!moves.empty()) {
      absl::StatusOr<MigrationOutcome> o = view.MovePages(moves, now);
      if (!o.ok()) return o.status();
      out.pages += *o;
      attempted = moves.size() - std::min<size_t>(moves.size(), o->deferred);
    }
    size_t done = 0;
    for (const Taken& t : taken) {
      // The limit is spent: the rest waits, this unit first (its pages
      // that were attempted are accounted for now, the rest when done).
      if (t.end_move > attempted) {
        for (size_t i = t.first_move; i < attempted; ++i) moved(moves[i].first);
        break;
      }
      for (size_t i = t.first_move; i < t.end_move; ++i) moved(moves[i].first);
      // A full destination is the policy's to hear about (failures in the
      // counters); the unit is not retried until its samples say so again.
      t.state->flags =
          static_cast<uint8_t>((t.state->flags & ~RegionState::kQueued) | RegionState::kPlaced);
      if (t.end_move > t.first_move) ++out.regions_done;
      ++done;
    }
    queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(done));
    if (done < taken.size()) break;
  }
  return out;
}

}  // namespace numavm
