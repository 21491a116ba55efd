// The region side of the balancer (VmBalancer): each period the samples of
// each 2 MiB region make its visit (policy/region_policy.h); a region that
// settles moves as one batch (RegionMoves); regions are decided in address
// order, so that one settled this period witnesses its neighbour's first
// visit. A region whose visits keep disagreeing within themselves is split
// into quarters, each decided by its own samples and moved on its own
// (DAMON's adaptive regions, in two levels); it merges back when its
// visits agree as a whole again. Two visits a few regions apart (at most
// kBracketSpan: the coarse pass of a sweep, ScanControl) that move to the
// same node for the same owner are a bracket: the regions between them
// move with them on their word, before the sweep's later passes visit
// them (one is visited at once while few were checked); their own visits
// then verify them, and a
// VM whose bracketed regions were contradicted more than one time in nine
// gets no more brackets. Samples of a region (or quarter) that
// decided are the region's; the others go to the per-page policy. A region
// settled by one vCPU's samples alone remembers that vCPU, and follows it
// when the vCPU is given a home on another node (Follow): memory that
// belongs to one vCPU need not wait for the scan to come round twice to
// learn that its owner moved; one settled by one vCPU group's samples alone
// (a group on one node) follows the group the same way, where the group
// goes on to other nodes (FollowGroup). A region one vCPU (or group) alone
// visited once goes along too, on that visit's word, checked by its next
// visit as a bracket's regions are. Only
// the sampling thread uses it.
#ifndef NUMAVM_BALANCER_REGION_BALANCER_H_
#define NUMAVM_BALANCER_REGION_BALANCER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>

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
  // A pass's pairs are four pairs apart (ScanControl::PassOf): the far
  // end of the pair before is 7 regions away.
  // Also how far apart neighbouring visits may lie (VmBalancer).
  static constexpr uint64_t kBracketSpan = 7;
  using Advice =
      std::function<void(uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason)>;

  RegionBalancer(uint64_t guest_pages, uint64_t backing_pages)
      : regions_(guest_pages),
        owner_(regions_.size(), kNoOwner),
        moves_(guest_pages, backing_pages) {}

  // One sample of the period: its page, where its vCPU wants the memory
  // (`target`, and the nodes that serve it: bit n for node index n), where
  // the page is, whether the page is private (not shared by vCPUs,
  // stats/page_state.h), the vCPU whose own node `target` is (-1: the
  // target is a group's, or the vCPU is unknown), and the vCPU group whose
  // one node `target` is (its id, VcpuPlacer::group_of; -1: none, or a
  // group over several nodes).
  void AddSample(uint64_t gfn, int target, uint64_t acceptable, int page_node, bool private_page,
                 int vcpu, int group = -1);

  struct Outcome {
    uint64_t wanted = 0;    // units the policy wants moved
    uint64_t changing = 0;  // units on the way to a decision, or leaving one
    // Settled regions whose visit agreed on another node (their owner
    // changed, or is about to be found wrong): PeriodOutcome::dissents.
    uint64_t dissents = 0;
    uint64_t visits = 0;  // regions visited
    // Regions whose first agreeing visit (no change of mind lately) found
    // their sampled pages away from their target: worth a second visit
    // soon, in order.
    std::vector<uint64_t> revisit;
  };
  // Decides every region visited since the last call: moves are queued
  // when `act` (balancing, past the warm-up), advised when `advice`.
  Outcome Decide(bool act, bool warming_up, DecisionCounts& decisions, const Advice& advice);
  // Whether the sample of `gfn` in this period was decided by its region.
  bool Decided(uint64_t gfn) const;

  // `vcpu` has a home on node `node` from now on: every settled region
  // that only `vcpu` was seen using and that is set for another node is
  // set for `node` (queued when `act`, advised when `advice`); so is one
  // on its way to settling (one visit, `vcpu`'s alone), on that visit's
  // word - verified by its next visit, as a bracketed region is - and so
  // are regions nobody owns between two that follow, up to kBracketSpan
  // apart (Carry). While this VM's brackets are not trusted, a region on
  // its way is only set for `node`, so that its next visit agrees rather
  // than counting as a change of mind (counted in `retargeted`, if
  // given). Returns the regions that follow. Cost: one pass over the
  // region table, per home change.
  uint64_t Follow(int vcpu, int node, bool act, DecisionCounts& decisions, const Advice& advice,
                  uint64_t* retargeted = nullptr);
  // The same for a vCPU group now on the nodes `stay` (a bit a node): the
  // regions settled (or settling) by samples of that group alone, while it
  // was on one node, follow it to `node` unless they are on one of `stay`
  // already - a pair's memory (numa01) has no one vCPU to follow, and a
  // group let go from one node over two (a pair on two one-CPU nodes)
  // takes the memory that is on neither.
  uint64_t FollowGroup(int group, int node, uint64_t stay, bool act, DecisionCounts& decisions,
                       const Advice& advice, uint64_t* retargeted = nullptr);
  // A vCPU got its first home: the votes of every region on its way to
  // settling that no single vCPU owns (Follow handles those) may say where
  // it ran before; they are marked stale (RegionState::kStale). Returns
  // how many. One pass over the region table.
  uint64_t AgeVotes();
  // vCPUs were found to share memory (a vCPU group formed or grew): the
  // changes of mind of regions not settled were likely its members'
  // samples disagreeing, which now want one node (the group's). Those
  // regions start afresh - no votes, no changes of mind, not split - so
  // that the group's shared memory moves within a visit or two rather
  // than after a run of agreement ages each change of mind away. Memory
  // two groups share disagrees again at its next visit. Returns how many.
  // One pass over the region table.
  uint64_t ForgetDisagreement();

  absl::StatusOr<RegionMovesOutcome> Drain(PlacementView& view, absl::Duration now,
                                           const std::function<void(uint64_t)>& moved);

  uint64_t regions() const { return regions_.size(); }
  // Regions moved on a bracket's word whose own later visit bore it out,
  // or contradicted it; and whether brackets are still used for this VM.
  uint64_t brackets_borne_out() const { return brackets_borne_out_; }
  uint64_t brackets_contradicted() const { return brackets_contradicted_; }
  bool brackets_trusted() const { return BracketsTrusted(); }
  uint64_t split_regions() const { return split_.size(); }
  size_t memory_bytes() const;

 private:
  struct Visit {
    RegionVisit whole;
    std::array<RegionVisit, kSubRegions> sub{};
    uint64_t acceptable = 0;
    int from = -1;   // a sampled page's node, for advice
    int owner = -1;  // the one vCPU of every sample (-1: several, or none)
    int group = -1;  // the one vCPU group of every sample (-1: several, or none)
  };
  static constexpr uint8_t kNoOwner = 0xff;
  // The outcome of one unit's verdict.
  void Act(const RegionVerdict& verdict, RegionState& state, const RegionMoves::Unit& unit,
           const Visit& v, bool act, bool warming_up, DecisionCounts& decisions,
           const Advice& advice, Outcome& out);
  RegionState* StateOf(const RegionMoves::Unit& unit);
  // Follow and FollowGroup: the regions that `who` (a group's id when
  // `group`) alone settled follow it to `node`, but for those on `node` or
  // on `stay`.
  uint64_t FollowRegions(int who, bool group, int node, uint64_t stay, bool act,
                         DecisionCounts& decisions, const Advice& advice, uint64_t* retargeted);
  // Between regions `a` and `b` of `who` that followed it to `node`, the
  // regions nobody owns yet go too (none if someone else's is between).
  uint64_t Carry(uint64_t a, uint64_t b, int who, bool group, int node, bool act,
                 DecisionCounts& decisions, const Advice& advice);
  // Region `r` takes `node` on another visit's word (a bracket's, or its
  // owner's move) rather than on visits of its own that agreed: settled
  // with `chain` links to a visit, `owner`'s (a group's when `group`),
  // and flagged RegionState::kBracket, so that its own next visit bears
  // the word out or contradicts it.
  void TakeWord(uint64_t r, int node, int chain, uint8_t owner, bool group);
  // Tells `advice` of region `r`'s move from `from` (-1: not known) to
  // `node` for `reason`, and queues the move when `act`.
  void Send(uint64_t r, int from, int node, const char* reason, bool act, const Advice& advice);
  // `neighbour` as a witness of `visit` (policy/region_policy.h): if it is
  // settled on the visit's target as a whole, its chain.
  void Witness(uint64_t neighbour, RegionVisit& visit);
  // The region a few to the left of `region` (at most kBracketSpan) that
  // moved lately, settled as a whole on `node` for `owner` (-1: nobody's
  // alone), with no region visited this period between them: the other
  // end of a bracket. None where the nearest region that moved lately
  // says otherwise.
  std::optional<uint64_t> Bracket(uint64_t region, int node, int owner) const;
  // `region` moved: the regions between it and its bracket move with it,
  // on their word (RegionState::kBracket).
  void Infer(uint64_t region, bool act, bool warming_up, DecisionCounts& decisions,
             const Advice& advice, Outcome& out);
  // Whether this VM's brackets have not misled it: contradicted at most
  // one time in nine (one word in eight or more, past the first one).
  bool BracketsTrusted() const { return brackets_contradicted_ * 8 <= brackets_borne_out_ + 8; }
  // Bracketed regions borne out before brackets are no longer checked at
  // once.
  static constexpr uint64_t kCheckedAtOnce = 16;
  // "Lately": within this many periods (Decide calls).
  static constexpr uint32_t kBracketPeriods = 8;

  RegionTable regions_;
  // Per region: the vCPU, or the vCPU group (RegionState::kGroupOwned),
  // that alone settled it.
  std::vector<uint8_t> owner_;
  // The vCPU that alone settled `region` (kNoOwner: none, or a group).
  uint8_t VcpuOwner(uint64_t region) const {
    return (regions_.at(region).flags & RegionState::kGroupOwned) ? kNoOwner : owner_[region];
  }
  // Regions moved within the last kBracketPeriods periods: the Decide
  // call that moved them.
  absl::flat_hash_map<uint64_t, uint32_t> moved_lately_;
  uint32_t decides_ = 0;
  // Regions moved on a bracket's word whose own visit bore it out, or not.
  uint64_t brackets_borne_out_ = 0, brackets_contradicted_ = 0;
  absl::flat_hash_map<uint64_t, std::array<RegionState, kSubRegions>> split_;
  RegionMoves moves_;
  absl::flat_hash_map<uint64_t, Visit> visits_;  // this period's
  absl::flat_hash_set<uint64_t> decided_;        // region * 8 + (sub + 1)
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REGION_BALANCER_H_
