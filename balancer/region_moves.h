// Regions waiting to move: the balancer's queue of 2 MiB regions (or a
// quarter of a split one) whose samples agreed on a node
// (policy/region_policy.h). Each period the queue drains as far as the
// migration limit allows: it asks where the units' pages are and moves
// those not on an acceptable node, several units to a call; what the limit
// defers stays at the front for the next period. Only the sampling thread touches
// it.
#ifndef NUMAVM_BALANCER_REGION_MOVES_H_
#define NUMAVM_BALANCER_REGION_MOVES_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/placement_view.h"
#include "balancer/stats/region_state.h"

namespace numavm {

struct RegionMovesOutcome {
  MigrationOutcome pages;
  uint64_t regions_done = 0;  // units whose pages moved
};

class RegionMoves {
 public:
  // A region, or sub-region `sub` (0-3) of a split one (-1: the whole).
  struct Unit {
    uint64_t region;
    int sub = -1;
  };
  // The state of a unit, or nullptr if it no longer exists (merged).
  using StateOf = std::function<RegionState*(const Unit&)>;

  // `pages`: guest pages; `page_pages`: 4 KiB pages per backing page (512
  // for hugetlb: one move per region).
  RegionMoves(uint64_t pages, uint64_t page_pages) : pages_(pages), page_pages_(page_pages) {}

  // Queues `unit` (once: RegionState::kQueued) to go to its state's node;
  // pages already on a node of `acceptable` (bit n: node index n) stay.
  void Push(RegionState& state, const Unit& unit, uint64_t acceptable);
  size_t queued() const { return queue_.size(); }
  // Pages (backing pages) of the units one MovePages call takes, at most
  // and a unit more: 16 batches of move_pages.
  static constexpr size_t kPagesPerCall = 16 * 512;

  // Drains within the view's limits; `moved(gfn)` is called for every page
  // that moved (re-migration accounting).
  absl::StatusOr<RegionMovesOutcome> Drain(const StateOf& state_of, PlacementView& view,
                                           absl::Duration now,
                                           const std::function<void(uint64_t)>& moved);
  size_t memory_bytes() const { return queue_.size() * sizeof(Entry); }

 private:
  struct Entry {
    Unit unit;
    uint64_t acceptable;
  };
  const uint64_t pages_;
  const uint64_t page_pages_;
  std::deque<Entry> queue_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REGION_MOVES_H_
