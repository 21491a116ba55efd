// The samplers of `numavm run`, modelled: what each would report of a
// workload model's accesses, and what it would cost the guest.
//  - hint: an armed page yields one sample on its first touch after arming,
//    from the vCPU that touched it, read or write; it stays armed until
//    touched. Each sample stalls its vCPU for one fault round trip.
//  - wp: as hint, but only a write reports (and disarms) a page.
//  - ring: every page a vCPU wrote in the period, per vCPU, reported when
//    it falls in the regions armed for the period (the real ring sampler
//    drops the rest). Every entry, reported or not, costs a write-protect
//    fault (those outside are charged by expectation, not drawn).
//  - dirtylog: armed regions' pages written in the period, VM-wide (no
//    vCPU); a page reports once per arming. Each costs a write-protect
//    fault.
// Arming and touching are the only state: a list of armed ranges, never
// anything per page or per sample beyond the period's batch.
#ifndef NUMAVM_BALANCER_SIMULATE_SAMPLER_MODEL_H_
#define NUMAVM_BALANCER_SIMULATE_SAMPLER_MODEL_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/sampler_kind.h"
#include "balancer/simulate/random.h"
#include "balancer/simulate/workload_model.h"

namespace numavm {

struct SamplerCosts {
  // One userfaultfd hinting-fault round trip (minor or write-protect) (docs/performance.md: ~55 us
  // on the development machine, 7-40 us on hardware).
  absl::Duration hint_fault = absl::Microseconds(55);
  // One KVM write-protect fault (dirty ring entry, dirty log page).
  absl::Duration write_protect_fault = absl::Microseconds(1);
  // Zapping one probe page (madvise, KVM dropping its mapping): the
  // sampler's CPU time per armed page on the development machine
  // (tests/bench/sampler_bench.cc: ~2 us), and per arming call: a run of
  // neighbouring probe pages (up to kMaxRunPages) costs it once.
  absl::Duration arm_page = absl::Microseconds(2);
  // One page migration on the balancer's thread (wall time), within
  // PageMigrator::kMaxTimePerPeriod a period; zero: moves are free.
  absl::Duration move_page;
  // An arming call costs arm_page once for each node the VM's vCPUs run on
  // (SamplerModel::set_spread): a TLB shootdown waits for every CPU the
  // VM's threads run on - in the NUMA lab, one emulated CPU after another
  // on one host thread, so a call there costs 3-4x as much once the vCPUs
  // spread over four one-CPU nodes. False: the same wherever they run.
  bool arm_per_node = false;
};

class SamplerModel {
 public:
  static constexpr uint64_t kMaxRunPages = ScanControl::kMaxRunPages;
  SamplerModel(SamplerKind kind, int vcpus, uint64_t pages, uint64_t seed, SamplerCosts costs);

  SamplerKind kind() const { return kind_; }
  std::vector<GfnRange> Coverage() const { return {{0, pages_}}; }
  void Arm(const ScanPlan& plan);
  // What one reported sample costs the guest (for the scan control).
  absl::Duration FaultCost() const {
    return faults() ? costs_.hint_fault : costs_.write_protect_fault;
  }
  // The samplers that arm probes and pay a userfault per sample.
  bool faults() const {
    return kind_ == SamplerKind::kHint || kind_ == SamplerKind::kWriteProtect ||
           kind_ == SamplerKind::kEvict || kind_ == SamplerKind::kProtNone;
  }
  // Who touches an armed page first (hint, evict, prot, wp, dirtylog): by
  // default each page's toucher is drawn on its own, a stream in
  // proportion to its rate. With `runs`, the pages of a run of up to
  // kMaxRunPages neighbours are all the first drawn one's: streams that go
  // through their memory in order (the NUMA lab's workloads) touch a run
  // of neighbouring probes within microseconds, long before another
  // stream comes by.
  void set_touch_runs(bool runs) { touch_runs_ = runs; }
  // How many nodes the VM's vCPUs run on now (SamplerCosts::arm_per_node).
  void set_spread(int nodes) { spread_ = nodes < 1 ? 1 : nodes; }
  // The workload of `phase` runs over [from, to): appends what the sampler
  // reports to `out`, and charges its faults to the vCPUs' stall time.
  void Run(const WorkloadPhase& phase, absl::Duration from, absl::Duration to, AccessBatch& out);

  const SamplerStats& stats() const { return stats_; }
  // The cost of the last Arm (newly armed pages x arm_page; hint only).
  absl::Duration last_arm_cost() const { return last_arm_cost_; }
  // Time each vCPU spent in sampling faults so far.
  const std::vector<absl::Duration>& stall() const { return stall_; }
  uint64_t armed_pages() const;

 private:
  void Report(const AccessSample& s, AccessBatch& out);
  // The next page at or after `g` (before `end`) that a run of Bernoulli(p)
  // trials picks; `end` if none.
  uint64_t Advance(uint64_t g, uint64_t end, double p);

  const SamplerKind kind_;
  const uint64_t pages_;
  const SamplerCosts costs_;
  SimRandom random_;
  std::vector<GfnRange> armed_;  // sorted, disjoint
  bool touch_runs_ = false;
  int spread_ = 1;
  SamplerStats stats_;
  std::vector<absl::Duration> stall_;
  absl::Duration last_arm_cost_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_SAMPLER_MODEL_H_
