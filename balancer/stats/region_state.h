// Per-region state: one entry per 2 MiB of guest memory (a 1 TiB guest has
// 524288 regions: 2 MiB of state), the unit the balancer decides for when
// a region's samples agree (policy/region_policy.h).
#ifndef NUMAVM_BALANCER_STATS_REGION_STATE_H_
#define NUMAVM_BALANCER_STATS_REGION_STATE_H_

#include <cstdint>
#include <vector>

namespace numavm {

inline constexpr uint64_t kRegionPages = 512;  // 2 MiB of 4 KiB pages
// A region whose samples keep disagreeing is split in quarters, each decided
// on its own (its probe's samples) and moved on its own.
inline constexpr int kSubRegions = 4;
inline constexpr uint64_t kSubRegionPages = kRegionPages / kSubRegions;

struct RegionState {
  static constexpr uint8_t kNoNode = 0xff;
  uint8_t node = kNoNode;  // where its samples say it belongs
  uint8_t votes : 4 = 0;   // agreement with `node` lately, 0-3
  uint8_t flips : 4 = 0;   // changes of `node` lately, 0-3
  uint8_t flags = 0;
  // Settled on a neighbour's word - its first visit agreed with a settled
  // neighbour (policy/region_policy.h): how many regions so settled stand
  // between it and one settled by its own visits, itself included. 0 for a
  // region that settled on its own visits or has not settled.
  uint8_t chain = 0;
  static constexpr uint8_t kQueued = 1;  // a move is waiting in the queue
  // All its pages were brought to `node` (or found there) since it last
  // settled: its sampled pages alone may not say so, as the page policy
  // moves sampled pages of regions that had not settled yet.
  static constexpr uint8_t kPlaced = 2;
  static constexpr uint8_t kSplit = 4;  // decided by quarters (RegionBalancer)
  // Its votes were cast before a vCPU got its first home, so they may say
  // where a vCPU ran then rather than where it lives now: the next visit
  // that disagrees starts it afresh instead of counting as a change of mind.
  static constexpr uint8_t kStale = 8;
  // A node it took on a neighbour's word (`chain` > 0) was contradicted by
  // its next visit: it takes no neighbour's word again, so that a region
  // at the edge between two owners' runs, whose visits see one side or the
  // other by chance, cannot be carried back and forth by its neighbours.
  static constexpr uint8_t kMisled = 16;
  // Moved on the word of the regions either side of it (a bracket,
  // RegionBalancer) and not visited since: its next visit counts for or
  // against such words.
  static constexpr uint8_t kBracket = 32;
  // The one owner RegionBalancer remembers for it is a vCPU group (named
  // by its smallest vCPU), not one vCPU.
  static constexpr uint8_t kGroupOwned = 64;
  // Settled: enough samples agree and it has not changed its mind lately.
  bool settled() const { return node != kNoNode && votes >= 2 && flips == 0; }
};
static_assert(sizeof(RegionState) == 4);

class RegionTable {
 public:
  explicit RegionTable(uint64_t pages) : regions_((pages + kRegionPages - 1) / kRegionPages) {}
  uint64_t size() const { return regions_.size(); }
  RegionState& at(uint64_t region) { return regions_[region]; }
  const RegionState& at(uint64_t region) const { return regions_[region]; }
  static uint64_t RegionOf(uint64_t gfn) { return gfn / kRegionPages; }
  uint64_t memory_bytes() const { return regions_.capacity() * sizeof(RegionState); }

 private:
  std::vector<RegionState> regions_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_STATS_REGION_STATE_H_
