#include "balancer/policy/region_policy.h"

#include <algorithm>

namespace numavm {

RegionVerdict OnRegionVisit(RegionState& r, const RegionVisit& v) {
  if (v.samples <= 0 || v.target < 0 || v.target >= RegionState::kNoNode) {
    return {RegionReason::kUnsettled};
  }
  const bool was_settled = r.settled();
  const bool was_placed = r.flags & RegionState::kPlaced;
  // Where one more agreeing visit decides, it is asked for at once.
  const bool wants_move = v.unanimous && !v.in_place;
  const bool stale = r.flags & RegionState::kStale;
  r.flags &= static_cast<uint8_t>(~RegionState::kStale);  // this visit is today's evidence
  // Any visit after the first is its own evidence: it no longer rests on a
  // neighbour's word (a visit a neighbour witnesses sets it below).
  const bool on_word = r.chain > 0;
  r.chain = 0;
  if (on_word && (!v.unanimous || v.target != r.node)) r.flags |= RegionState::kMisled;
  const bool may_take_word =
      !(r.flags & RegionState::kMisled) && v.witness_chain < kMaxWitnessChain;
  if (!v.unanimous) {
    // Samples from several places at once: evidence against any one owner,
    // and a change of mind - a few samples of shared memory agree by
    // chance now and then, and must not settle it.
    if (r.votes > 0) --r.votes;
    if (r.flips < 3) ++r.flips;
    r.flags &= static_cast<uint8_t>(~RegionState::kPlaced);
    return {was_settled ? RegionReason::kDissent : RegionReason::kUnsettled};
  }
  const uint8_t t = static_cast<uint8_t>(v.target);
  const int strength = v.samples >= 2 ? 2 : 1;  // two pages agreeing weigh more than one
  if (r.node == RegionState::kNoNode) {
    r.node = t;
    // A first visit alone never settles a region; one a settled neighbour
    // witnesses does.
    if (may_take_word) {
      r.votes = 2;
      r.chain = static_cast<uint8_t>(v.witness_chain + 1);
    } else {
      r.votes = 1;
      if (wants_move && r.flips == 0) return {RegionReason::kUnsettled, -1, true};
    }
  } else if (t == r.node) {
    const int votes = std::min(3, r.votes + strength);
    // A full run of agreement ages an earlier change of mind.
    if (votes == 3 && r.flips > 0) --r.flips;
    r.votes = static_cast<uint8_t>(votes);
  } else if (may_take_word && r.flips == 0) {
    // Its samples now point where a settled neighbour is: the owner of the
    // run it is in changed (a phase of the workload, memory passed on), and
    // the neighbour's own visits showed it. Taken at once, as a first
    // visit's would be - not a change of mind - instead of a visit that
    // dissents, one that changes its mind and one that confirms it.
    r.node = t;
    r.votes = 2;
    r.chain = static_cast<uint8_t>(v.witness_chain + 1);
    r.flags &= static_cast<uint8_t>(~RegionState::kPlaced);
  } else {
    if (stale && !was_settled && r.flips == 0) {
      // What it had was cast before a vCPU had a home (it ran where the
      // host scheduler put it): not a change of mind, a first visit.
      r.node = t;
      r.votes = 1;
      return {RegionReason::kUnsettled, -1, wants_move};
    }
    const int votes = r.votes - strength;
    if (votes > 0) {
      r.votes = static_cast<uint8_t>(votes);
      if (was_settled) return {RegionReason::kDissent, -1, wants_move && votes == 1};
      return {RegionReason::kUnsettled};
    }
    // Its samples now point elsewhere: a change of mind.
    r.node = t;
    r.votes = 1;
    if (r.flips < 3) ++r.flips;
    r.flags &= static_cast<uint8_t>(~RegionState::kPlaced);
    return {RegionReason::kUnsettled, -1, wants_move && was_placed && r.flips == 1};
  }
  if (!r.settled()) return {RegionReason::kUnsettled};
  // In place only once the whole region was checked: its sampled pages may
  // have moved on their own.
  if (v.in_place && (r.flags & RegionState::kPlaced)) return {RegionReason::kInPlace};
  return {RegionReason::kMove, r.node};
}

}  // namespace numavm
