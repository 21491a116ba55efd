// Co-access seen in address order: neighbouring runs of samples from two
// vCPUs in turn (a, b, a) are memory both use at once.
//
// A run is the samples one vCPU gave in a row, in address order; runs are
// neighbours when no other sample lies between them and they are at most
// `span_regions` 2 MiB regions apart (the regions a period visits lie in
// pairs, a pair's probes one call). Where the scan arms runs (a call costs
// more than faults) a page is sampled again only a sweep or two later, and
// hand-overs on one page take minutes to show; neighbours that alternate
// show sharing at the first visit - three pages where vCPUs hand over page
// by page, three probe calls where a vCPU that goes through memory in order
// touches a whole call's pages first. Such calls are few a period there, so
// the runs go on into the next period's batch where it goes on in address
// order (the scan's later sweeps). A run that crosses from one vCPU's
// memory into another's (a slice boundary) changes hands once and counts
// nothing.
#ifndef NUMAVM_BALANCER_STATS_NEIGHBOUR_RUNS_H_
#define NUMAVM_BALANCER_STATS_NEIGHBOUR_RUNS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "balancer/sampling/access_sample.h"

namespace numavm {

// What NeighbourRuns saw: runs of samples from one vCPU, triples of two
// vCPUs in turn that counted as sharing, and chains of runs cut (a sample
// behind the last, or too far on).
struct NeighbourRunCounts {
  uint64_t runs = 0, turns = 0, cuts = 0;
};

class NeighbourRuns final {
 public:
  // `near_pages`: how close a lone sample must lie to the runs beside it
  // (one arming call's reach) to count.
  NeighbourRuns(uint64_t span_regions, uint64_t near_pages)
      : span_regions_(span_regions), near_pages_(near_pages) {}

  // `share(a, b, n)`: vCPUs a and b were seen in turn, worth n samples (the
  // shortest of the three runs; a lone sample counts once, and only near).
  // Samples without a vCPU below `vcpus` or at or past `guest_pages` are
  // left out.
  using Share = std::function<void(int a, int b, uint64_t n)>;
  void Add(const AccessBatch& batch, int vcpus, uint64_t guest_pages, const Share& share);

  const NeighbourRunCounts& counts() const { return counts_; }

 private:
  struct Run {
    uint64_t first, last;
    int vcpu;
    uint64_t samples;
  };
  void CloseTriple(const Share& share);

  const uint64_t span_regions_;
  const uint64_t near_pages_;
  std::vector<Run> runs_;  // the last three, carried to the next batch
  NeighbourRunCounts counts_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_STATS_NEIGHBOUR_RUNS_H_
