// What the scanner arms and when: the one scan control behind every face
// (`numavm run`'s sampling thread, `numavm simulate`'s sampler model). Pure:
// no clock, no syscalls; each period's figures are the input.
//
// By default it samples regions: it walks the sampler's coverage 2 MiB at a
// time, wrapping like the kernel's NUMA scanner, and each period arms the
// next regions at the scan rate (policy/scan_rate.h), a few probe pages in
// each (`probes_per_region`, spread over the region at offsets fixed per
// region, so that the same pages are sampled on every sweep and hand-overs
// between vCPUs show; where one arming call costs the host more than a few
// faults cost the guest, the probes come as runs of neighbouring pages at
// fewer places, one call a run: ScanRate::RunPages). On 2 MiB backing
// pages a region's probe is its huge page. Probes that touch are armed as
// one range, with one call: neighbouring regions' runs meet at their
// common boundary (one call for two regions), and neighbouring huge pages
// go together (one call for up to kMaxHugeRunPages). The first sweep goes
// coarse to fine, in three passes over the coverage: one pair of regions
// in four (the two whose runs meet), the pairs halfway between, the rest -
// a run of memory that must move is found within a quarter of the sweep,
// and RegionBalancer moves the regions between two visits that agree (its
// brackets). Later sweeps go in address order, until half the regions a
// period visits dissent from where they settled (owners changed), or as
// many regions were set for the new home of a vCPU that moved (the rest
// of its memory is still to be found): that sweep starts again there
// coarse to fine, once a sweep, and ends there.
// On 2 MiB backing pages sweeps stay in address order (neighbouring huge
// pages share calls). Samplers that pay per fault arm the probes; the
// others watch the whole regions. At most one
// sweep a period: when the rate allows more (small guests) the period
// shortens, down to 100 ms, and past that the probes grow denser.
//
// With `window_bytes` set it is the older scanner: that many bytes a period,
// every page of them, and a period that adapts to the outcome
// (policy/scan_period.h).
#ifndef NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_
#define NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "balancer/policy/scan_period.h"
#include "balancer/policy/scan_rate.h"
#include "balancer/sampling/scan_window.h"

namespace numavm {

struct ScanConfig {
  uint64_t window_bytes = 0;  // > 0: the fixed-window scanner
  absl::Duration period = absl::Seconds(1);
  absl::Duration period_max = absl::Seconds(16);  // fixed window only
  bool adaptive = false;  // while balancing: the period (window) or rate follows the outcome
  ScanRateConfig rate;    // regions
  int vcpus = 1;          // sizes the first period's budget
};

// What to arm for the coming period.
struct ScanPlan {
  std::vector<GfnRange> regions;  // the memory scanned (ring, dirty log)
  std::vector<GfnRange> probes;   // the pages to fault on (hinting faults)
  bool empty() const { return regions.empty(); }
};

// What the period did.
struct ScanFeedback {
  PeriodOutcome outcome;
  absl::Duration vcpu_busy;   // CPU time of all vCPU threads in the period
  uint64_t faults = 0;        // samples that cost the guest a fault
  absl::Duration fault_cost;  // one fault's round trip
  // The host's time for the period's scan: arming, collecting and
  // deciding (the sampling thread's CPU).
  absl::Duration host_time;
};

class ScanControl {
 public:
  // The longest run of neighbouring pages a sampler arms with one call
  // (and checks for residency first: hint_fault_sampler.cc); the
  // simulator charges such a run as one call.
  static constexpr uint64_t kMaxRunPages = 64;
  // On 2 MiB backing pages, the most huge pages one arming call covers.
  static constexpr uint64_t kMaxHugeRunPages = 64;

  // `coverage`: what the sampler can watch; `align_pages`: the backing's
  // page size in 4 KiB pages (512 for 2 MiB hugetlb: one probe, the huge
  // page); `fault_cost` and config.vcpus size the first period's budget.
  ScanControl(std::vector<GfnRange> coverage, uint64_t align_pages, const ScanConfig& config,
              absl::Duration fault_cost = absl::Microseconds(55));

  // Whether the guest has any memory in a 2 MiB region now (mincore of its
  // backing in `run`, the model's first touches in `simulate`).
  using Resident = std::function<bool(const GfnRange& region)>;

  // The plan for the coming period. With `resident`, the sweep passes over
  // regions with no memory (never touched by the guest, or given back):
  // they have nothing to arm or to sample, so they cost a check, not a
  // visit, and do not count against the period's regions - a guest that
  // uses a quarter of its RAM is swept four times as often. At most
  // kMaxPassedOver of them a period (and never past the sweep's end), so
  // that a large guest that is mostly empty costs bounded checks a period.
  // Revisits are not checked: their first visit had samples.
  ScanPlan NextArm(const Resident& resident = nullptr);
  // The period that follows `feedback`.
  absl::Duration OnPeriod(const ScanFeedback& feedback);

  bool regions_mode() const { return !window_.has_value(); }
  absl::Duration period() const;
  absl::Duration period_max() const;
  uint64_t period_changes() const;
  uint64_t sweeps() const { return sweeps_; }
  // Bytes of guest memory covered per second now (regions mode: at most a
  // sweep a period), and the ceiling the stall budget allows (at the
  // default probe density).
  double rate_bytes_per_second() const;
  double ceiling_bytes_per_second() const;
  // Regions mode: the host's time per armed probe (arming, collecting,
  // balancing), as the budget charges it; zero otherwise.
  absl::Duration host_cost_per_probe() const;
  // ... and per arming call (a range of neighbouring probes: the figure
  // `numavm simulate --arm-cost` takes).
  absl::Duration host_cost_per_call() const;
  uint64_t regions_armed() const { return regions_armed_total_; }
  // Arming calls planned so far (ranges of neighbouring probes, one call
  // each): with the host's time for the scan, its mean cost a call.
  uint64_t arm_calls() const { return arm_calls_total_; }
  // Regions mode: the pages of each probe run in the last plan (1: single
  // pages spread over the region).
  uint64_t run_pages() const { return run_pages_; }
  // Regions mode: the probe pages of each region in the last plan (1 on
  // 2 MiB backing pages, the huge page; more than configured where a
  // small guest is probed densely).
  int probes_per_region() const { return probes_last_; }
  // Regions visited again because their first visit asked to move them.
  uint64_t revisits() const { return revisits_armed_; }
  // Sweeps whose coarse pass started again where settled memory dissented
  // (or a vCPU's or a group's memory followed it to a new node).
  uint64_t coarse_restarts() const { return restarts_; }
  // The pass of a coarse sweep (salt: the sweep's number) in which region
  // `index` is visited on 4 KiB backing: 0, 1 or 2 (kPasses).
  static int PassOf(uint64_t index, uint64_t salt);
  static constexpr int kPasses = 3;
  // Regions passed over so far because they had no memory (NextArm's
  // `resident`).
  uint64_t regions_passed() const { return passed_total_; }
  static constexpr uint64_t kMaxPassedOver = 4096;  // 8 GiB a period

 private:
  // The next region of the sweep, in its passes; none when the sweep
  // ended without one (it is complete: `wrapped_`).
  std::optional<GfnRange> NextRegion();
  // The next region of the coverage in address order; `end`: it was the
  // coverage's last.
  GfnRange NextInOrder(bool& end);

  // Plans `region`'s visit: the region and its probes (runs placed by `salt`).
  void AddProbes(ScanPlan& plan, const GfnRange& region, int probes, uint64_t run,
                 uint64_t salt) const;
  // Joins ranges that touch (the end of one region's run and the start of
  // the next one's, neighbouring huge pages) into one range of at most
  // `max_pages`: one arming call.
  static void Coalesce(std::vector<GfnRange>& runs, uint64_t max_pages);
  // Region `index` (gfn / 512) within the coverage, if any of it is.
  std::optional<GfnRange> RegionRange(uint64_t index) const;
  absl::Duration PeriodFor(double regions_per_second) const;
  // The shortest period regions mode shortens to when a sweep takes less.
  static constexpr absl::Duration kMinPeriod = absl::Milliseconds(100);

  std::optional<ScanWindow> window_;
  std::optional<ScanPeriodController> periods_;
  const absl::Duration period_;  // the configured (longest) period
  absl::Duration current_;       // regions mode: this period's length
  const bool adaptive_;
  const uint64_t align_pages_;
  const int probes_;
  std::vector<GfnRange> coverage_;
  const int passes_;  // 1 on 2 MiB backing (address order), else kPasses
  int pass_ = 0;
  bool restarted_ = false;  // this sweep's coarse pass started again
  // This sweep goes in passes: the first sweep, and one that started again
  // where settled memory dissented; the others go in address order.
  bool coarse_ = true;
  uint64_t restarts_ = 0;
  uint64_t total_pages_ = 0;
  std::optional<ScanRate> rate_;
  size_t range_ = 0;  // cursor: coverage range, and page within it
  uint64_t offset_ = 0;
  uint64_t covered_ = 0;  // pages walked in this sweep
  bool wrapped_ = false;  // the last NextArm completed a sweep
  uint64_t sweeps_ = 0;
  double carry_ = 0;  // fractional regions owed to the next period
  uint64_t regions_armed_ = 0, regions_armed_total_ = 0, probes_armed_ = 0, arm_calls_ = 0;
  uint64_t arm_calls_total_ = 0;
  uint64_t regions_total_ = 0;  // one sweep
  uint64_t run_pages_ = 1;
  int probes_last_ = 0;
  // Regions to visit again (PeriodOutcome::revisit), oldest first; at most
  // kMaxRevisits wait (the regions of a 2 TiB guest), the rest are visited
  // by the sweep.
  std::deque<uint64_t> revisits_;
  static constexpr size_t kMaxRevisits = 1 << 20;
  uint64_t revisits_armed_ = 0;
  uint64_t passed_total_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_SCAN_CONTROL_H_
