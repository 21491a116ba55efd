// The region decision: a pure function of a 2 MiB region's state and one
// visit - the samples of that region in one scan period. The scanner
// samples a few pages per region (policy/scan_control.h), so a region is
// judged by its visits: when visits agree on a node - two in a row, and no
// change of mind lately - the whole region moves there as one batch, and
// later visits verify it. A region whose samples disagree (two owners,
// shared memory, a group spread over nodes) is not decided: its samples go
// to the per-page policy (policy/page_policy.h), and so do samples of a
// visit that disagrees with a settled region - its pages used by someone
// else are handled as pages.
//
// The two lessons of per-page balancing, one level up: one visit is noise
// (`votes`: a region settles on its second agreeing visit), and memory whose
// owner keeps changing is not moved back and forth (`flips` counts changes
// of mind and visits that disagree within themselves, and ages back to zero
// only through agreement: a shared region whose few samples agree by chance
// does not settle). Evidence ages with the vCPUs' homes: votes of a region
// not settled yet that were cast before a vCPU got its first home
// (RegionState::kStale) are dropped by the next visit that disagrees,
// without a change of mind. Votes are counted
// per visit, not per sample, so that scanning a region densely does not
// make it decide faster than time passes.
//
// Memory is handed out in runs (a vCPU's heap, a group's buffer), so a
// region's neighbour is a witness: a region whose first visit agrees with
// a neighbour settled on the same node with no change of mind settles at
// once, without the scan's second visit (DAMON's regions merge where they
// agree: the same lesson). A neighbour settled that way is a witness too,
// for up to kMaxWitnessChain regions from one that settled by its own
// visits, so a run of regions with one owner waits for a second visit at
// one region in every kMaxWitnessChain + 1. The chain is bounded because a
// first visit can agree by chance - shared memory streamed by one vCPU at
// a time looks private to one visit - and a chain that ran on unchecked
// would carry one chance through a whole buffer. Where owners change, the
// next owner's first region meets a neighbour that disagrees and waits for
// its own second visit.
//
// When the owner of a run changes (a phase of the workload, memory passed
// from vCPU to vCPU), a settled region needs three visits to follow: one
// that dissents, one that changes its mind, one that confirms it. They are
// asked for at once (RegionVerdict::again) rather than a sweep apart - for
// a region that was in place, on its first change of mind - and once one
// region of the run has settled on the new owner by its own visits, the
// next ones take its word as a first visit would: a visit that agrees
// with a settled neighbour moves the region at once, if the region has
// not changed its mind lately. A region whose next visit contradicts a
// neighbour's word it took (RegionState::kMisled) takes no word again, so
// a region at the edge of two runs is not carried back and forth.
#ifndef NUMAVM_BALANCER_POLICY_REGION_POLICY_H_
#define NUMAVM_BALANCER_POLICY_REGION_POLICY_H_

#include "balancer/stats/region_state.h"

namespace numavm {

enum class RegionReason : uint8_t {
  kMove,       // settled on a node it is not on: move the region
  kInPlace,    // settled, and its sampled pages are where they belong
  kUnsettled,  // not settled (yet, or mixed): the page policy decides
  kDissent,    // the visit disagrees with the settled region: page policy
};

struct RegionVerdict {
  RegionReason reason = RegionReason::kUnsettled;
  int to_node = -1;  // with kMove
  // Visit it again at once rather than a sweep later: its visit wants it
  // moved and one more agreeing visit decides (a first visit; a visit that
  // dissents from where it settled; the change of mind of a region that
  // was in place - an owner that changed shows in a visit that dissents,
  // one that changes its mind and one that confirms it).
  bool again = false;
};

// One period's samples of one region.
struct RegionVisit {
  int target = -1;  // where the samples' vCPUs want the memory (their
                    // node, or their group's primary node)
  int samples = 0;
  bool unanimous = true;  // every sample had the same target
  bool in_place = true;   // every sampled page is on a node serving the target
  // The shortest RegionState::chain of a neighbouring region settled on
  // `target` as a whole (set by the caller; kNoWitness: none).
  int witness_chain = kNoWitness;
  static constexpr int kNoWitness = 0xff;
};

// The longest chain of regions settled on a neighbour's word.
inline constexpr int kMaxWitnessChain = 31;

RegionVerdict OnRegionVisit(RegionState& region, const RegionVisit& visit);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_REGION_POLICY_H_
