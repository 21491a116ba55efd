#include "balancer/policy/region_policy.h"

#include <algorithm>

namespace numavm {

RegionVerdict OnRegionVisit(RegionState& r, const RegionVisit& v) {
  if (v.samples <= 0 || v.target < 0 || v.target >= RegionState::kNoNode) {
    return {RegionReason::kUnsettled};
  }
  const bool was_settled = r.settled();
  const bool stale = r.flags & RegionState::kStale;
  r.flags &= static_cast<uint8_t>(~RegionState::kStale);  // this visit is today's evidence
  // Any visit after the first is its own evidence: it no longer rests on a
  // neighbour's word (a first visit a neighbour witnesses sets it below).
  r.chain = 0;
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
    if (v.witness_chain < kMaxWitnessChain) {
      r.votes = 2;
      r.chain = static_cast<uint8_t>(v.witness_chain + 1);
    } else {
      r.votes = 1;
    }
  } else if (t == r.node) {
    const int votes = std::min(3, r.votes + strength);
    // A full run of agreement ages an earlier change of mind.
    if (votes == 3 && r.flips > 0) --r.flips;
    r.votes = static_cast<uint8_t>(votes);
  } else {
    if (stale && !was_settled && r.flips == 0) {
      // What it had was cast before a vCPU had a home (it ran where the
      // host scheduler put it): not a change of mind, a first visit.
      r.node = t;
      r.votes = 1;
      return {RegionReason::kUnsettled};
    }
    const int votes = r.votes - strength;
    if (votes > 0) {
      r.votes = static_cast<uint8_t>(votes);
      return {was_settled ? RegionReason::kDissent : RegionReason::kUnsettled};
    }
    // Its samples now point elsewhere: a change of mind.
    r.node = t;
    r.votes = 1;
    if (r.flips < 3) ++r.flips;
    r.flags &= static_cast<uint8_t>(~RegionState::kPlaced);
    return {RegionReason::kUnsettled};
  }
  if (!r.settled()) return {RegionReason::kUnsettled};
  // In place only once the whole region was checked: its sampled pages may
  // have moved on their own.
  if (v.in_place && (r.flags & RegionState::kPlaced)) return {RegionReason::kInPlace};
  return {RegionReason::kMove, r.node};
}

}  // namespace numavm
