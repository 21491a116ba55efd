#include "balancer/stats/neighbour_runs.h"

#include <algorithm>
#include <utility>

#include "balancer/stats/region_state.h"

namespace numavm {

void NeighbourRuns::CloseTriple(const Share& share) {
  if (runs_.size() < 3) return;
  const Run& a = runs_[0];
  const Run& b = runs_[1];
  const Run& c = runs_[2];
  if (a.vcpu != c.vcpu) return;
  uint64_t n = std::min({a.samples, b.samples, c.samples});
  if (n < 2) {
    // A lone sample among them counts once, and only where the three lie
    // within one arming call's reach (vCPUs close behind each other in the
    // same memory touch a call's pages in turn); apart, it is a vCPU
    // touching memory now and then.
    const bool near = b.first - a.last <= near_pages_ && c.first - b.last <= near_pages_;
    n = near ? 1 : 0;
  }
  if (n == 0) return;
  share(a.vcpu, b.vcpu, n);
  ++counts_.turns;
}

void NeighbourRuns::Add(const AccessBatch& batch, int vcpus, uint64_t guest_pages,
                        const Share& share) {
  std::vector<std::pair<uint64_t, int>> sampled;
  sampled.reserve(batch.size());
  for (const AccessSample& s : batch) {
    if (s.vcpu >= 0 && s.vcpu < vcpus && s.gfn < guest_pages) sampled.emplace_back(s.gfn, s.vcpu);
  }
  std::sort(sampled.begin(), sampled.end());
  for (const auto& [gfn, vcpu] : sampled) {
    if (!runs_.empty() && (gfn < runs_.back().last ||
                           gfn / kRegionPages - runs_.back().last / kRegionPages > span_regions_)) {
      CloseTriple(share);
      runs_.clear();
      ++counts_.cuts;
    }
    if (!runs_.empty() && runs_.back().vcpu == vcpu) {
      runs_.back().last = gfn;
      runs_.back().samples += 1;
      continue;
    }
    if (runs_.size() == 3) {
      CloseTriple(share);
      runs_.erase(runs_.begin());
    }
    runs_.push_back({gfn, gfn, vcpu, 1});
    ++counts_.runs;
  }
}

}  // namespace numavm
