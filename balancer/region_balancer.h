// The region side of the balancer (VmBalancer): each period the samples of
// each 2 MiB region make its visit (policy/region_policy.h); a region that
// settles moves as one batch (RegionMoves). A region whose visits keep
// disagreeing within themselves is split into quarters, each decided by its
// own samples and moved on its own (DAMON's adaptive regions, in two
// levels); it merges back when its visits agree as a whole again. Samples
// of a region (or quarter) that decided are the region's; the others go to
// the per-page policy. Only the sampling thread uses it.
#ifndef NUMAVM_BALANCER_REGION_BALANCER_H_
#define NUMAVM_BALANCER_REGION_BALANCER_H_

#include <array>
#include <cstdint>
#include <functional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/balancer_counters.h"
#include "balancer/placement_view.h"
#include "balancer/policy/region_policy.h"
#include "balancer/region_moves.h"
#include "balancer/stats/region_state.h"

namespace numavm {

class RegionBalancer {
 public:
  using Advice =
      std::function<void(uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason)>;

  RegionBalancer(uint64_t guest_pages, uint64_t backing_pages)
      : regions_(guest_pages), moves_(guest_pages, backing_pages) {}

  // One sample of the period: its page, where its vCPU wants the memory
  // (`target`, and the nodes that serve it: bit n for node index n), where
  // the page is, and whether the page is private (not shared by vCPUs,
  // stats/page_state.h).
  void AddSample(uint64_t gfn, int target, uint64_t acceptable, int page_node, bool private_page);

  struct Outcome {
    uint64_t wanted = 0;    // units the policy wants moved
    uint64_t changing = 0;  // units on the way to a decision, or leaving one
    uint64_t visits = 0;    // regions visited
  };
  // Decides every region visited since the last call: moves are queued
  // when `act` (balancing, past the warm-up), advised when `advice`.
  Outcome Decide(bool act, bool warming_up, DecisionCounts& decisions, const Advice& advice);
  // Whether the sample of `gfn` in this period was decided by its region.
  bool Decided(uint64_t gfn) const;

  absl::StatusOr<RegionMovesOutcome> Drain(PlacementView& view, absl::Duration now,
                                           const std::function<void(uint64_t)>& moved);

  uint64_t regions() const { return regions_.size(); }
  uint64_t split_regions() const { return split_.size(); }
  size_t memory_bytes() const;

 private:
  struct Visit {
    RegionVisit whole;
    std::array<RegionVisit, kSubRegions> sub{};
    uint64_t acceptable = 0;
    int from = -1;  // a sampled page's node, for advice
  };
  // The outcome of one unit's verdict.
  void Act(const RegionVerdict& verdict, RegionState& state, const RegionMoves::Unit& unit,
           const Visit& v, bool act, bool warming_up, DecisionCounts& decisions,
           const Advice& advice, Outcome& out);
  RegionState* StateOf(const RegionMoves::Unit& unit);

  RegionTable regions_;
  absl::flat_hash_map<uint64_t, std::array<RegionState, kSubRegions>> split_;
  RegionMoves moves_;
  absl::flat_hash_map<uint64_t, Visit> visits_;  // this period's
  absl::flat_hash_set<uint64_t> decided_;        // region * 8 + (sub + 1)
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REGION_BALANCER_H_
