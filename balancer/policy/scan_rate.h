// How much guest memory to sample per second: the scan rate, a controlled
// quantity between a floor and a ceiling, and never past a stall budget.
//
// Every sampled page costs: the host's time to arm, collect and decide on it
// (the sampling thread's CPU, which on a busy host is vCPU time too) and,
// if touched, a fault (a hinting-fault round trip is 8-55 us on the
// development machines, 7-40 us on hardware; the kernel's own hinting fault
// ~1 us). The budget caps the probes per period so that host time plus
// fault cost x faults stays within `stall_budget` of the vCPUs' busy time;
// the ceiling is what that allows, the floor a sixteenth of it. The costs
// are estimates (smoothed, a period behind), so what a period spends past
// its share is owed and comes off the next period's probes, below the
// floor if need be, and what it leaves unspent is kept for it. A fixed
// cost per period shows as a higher cost per probe when periods are short,
// so the ceiling falls and the period grows back. Within them the rate is at the
// ceiling while the balancer finds work (moves wanted, done or deferred,
// regions on the way to a decision or leaving one, vCPUs moved) or has not
// yet covered the guest twice (a region needs two agreeing visits), and
// halves after each whole sweep in which it found work in under 1% of the
// regions it visited - the kernel's scan-period back-off, per sweep rather
// than per window, so that a window that happens to be local does not slow
// the scan of a guest that is not, and a few shared pages that never
// settle do not keep it at the ceiling. Pure: the period's figures are the
// input.
#ifndef NUMAVM_BALANCER_POLICY_SCAN_RATE_H_
#define NUMAVM_BALANCER_POLICY_SCAN_RATE_H_

#include <algorithm>
#include <cstdint>

#include "absl/time/time.h"

namespace numavm {

struct ScanRateConfig {
  double stall_budget = 0.01;         // share of the vCPUs' busy time
  uint64_t min_bytes_per_second = 0;  // 0: a sixteenth of the ceiling
  uint64_t max_bytes_per_second = 0;  // 0: what the budget allows
  int probes_per_region = 4;
};

// One period, as the scan control saw it.
struct ScanPeriodFigures {
  absl::Duration length;       // the period's length
  absl::Duration vcpu_busy;    // CPU time of all vCPU threads in it
  uint64_t regions_armed = 0;  // armed at its start
  uint64_t probes_armed = 0;   // pages armed in them
  uint64_t arm_calls = 0;      // ranges they were armed as (one call each)
  uint64_t faults = 0;         // samples that cost the guest a fault
  absl::Duration fault_cost;   // one fault's round trip
  absl::Duration host_time;    // the host's time for the period's scan
  uint64_t work = 0;           // moves wanted and regions changing
  bool vcpus_moved = false;
  bool sweep_done = false;  // the scan wrapped at its end
};

class ScanRate {
 public:
  ScanRate(const ScanRateConfig& config, uint64_t region_bytes, int vcpus,
           absl::Duration fault_cost)
      : config_(config),
        region_bytes_(region_bytes),
        probes_(std::max(1, config.probes_per_region)),
        max_faults_(std::max(1, vcpus)) {
    // Before anything is measured: every vCPU busy, the given fault cost;
    // the first period at the floor, since the host's time to arm is not
    // known yet (milliseconds a call in the NUMA lab: at the ceiling its
    // first period alone would spend a third of a minute's budget).
    ceiling_ = Ceiling(absl::Seconds(vcpus), fault_cost, absl::Seconds(1));
    regions_ = Floor();
  }

  // Regions to arm per second, at `probes_per_region` each (the scan
  // control may cover fewer regions more densely with the same probes).
  double regions_per_second() const { return regions_; }
  double bytes_per_second() const { return regions_ * region_bytes_; }
  double ceiling_bytes_per_second() const { return ceiling_ * region_bytes_; }
  // The host's time per armed probe as measured (smoothed), seconds.
  double host_seconds_per_probe() const { return host_per_probe_; }
  // ... and per arming call (a range of neighbouring probes costs one).
  double host_seconds_per_call() const { return host_per_call_; }
  // Whether a period with probes has been seen (the host's cost is known).
  bool measured() const { return measured_; }
  // How many neighbouring pages each probe position should be, at most
  // `max`: a power of two, doubled while one arming call costs the host
  // more than that many faults cost the guest. Where calls are cheap next
  // to faults (the development machine: ~2-10 us against ~55 us) it is 1
  // and the probes spread over the region; where a call costs milliseconds
  // (the NUMA lab's nested TLB shootdowns, docs/numa-lab.md) a region is
  // visited at fewer places with a run of pages each, for one call, and
  // the budget then covers more regions.
  int RunPages(int max) const {
    int k = 1;
    const double fault = absl::ToDoubleSeconds(fault_cost_);
    while (k * 2 <= max && host_per_call_ > k * fault) k *= 2;
    return k;
  }

  void OnPeriod(const ScanPeriodFigures& f) {
    if (f.probes_armed > 0) {
      // Faults per armed probe, smoothed (untouched probes fault later, so
      // this is a slight underestimate while memory is idle). More than
      // one where vCPUs share the probes: each vCPU that writes an armed
      // page waits for it and faults (numa01 in the NUMA lab: 6,245 faults
      // for 4,594 pages armed), so up to one a vCPU.
      const double seen = static_cast<double>(f.faults) / f.probes_armed;
      faults_per_probe_ = std::clamp(0.7 * faults_per_probe_ + 0.3 * seen, 0.0625, max_faults_);
      // The first measurement is taken as it is: smoothing it in from zero
      // would let a host where arming is dear (milliseconds a call) spend
      // several periods over its budget before the estimate caught up.
      const double w = measured_ ? 0.3 : 1.0;
      measured_ = true;
      const double host = absl::ToDoubleSeconds(f.host_time) / f.probes_armed;
      host_per_probe_ = (1 - w) * host_per_probe_ + w * host;
      const double calls = static_cast<double>(std::max<uint64_t>(1, f.arm_calls));
      host_per_call_ = (1 - w) * host_per_call_ + w * absl::ToDoubleSeconds(f.host_time) / calls;
    }
    if (f.fault_cost > absl::ZeroDuration()) fault_cost_ = f.fault_cost;
    ceiling_ = Ceiling(f.vcpu_busy, f.fault_cost, f.length);
    // What the period spent against its share of the budget. The rate
    // follows estimates, so a cheap period buys more probes for a next one
    // that may cost more: what is spent past the share is owed and comes
    // off the next period's probes, and what is left unspent is kept for
    // it - up to one period's share either way, so that neither an idle
    // spell (host time, no vCPU time) nor a long quiet one carries over.
    const double share = config_.stall_budget * absl::ToDoubleSeconds(f.vcpu_busy);
    const double spent = absl::ToDoubleSeconds(f.host_time) +
                         static_cast<double>(f.faults) * absl::ToDoubleSeconds(f.fault_cost);
    debt_ = std::clamp(debt_ + spent - share, -share, share);
    sweep_work_ += f.work;
    sweep_regions_ += f.regions_armed;
    if (f.vcpus_moved) {
      settled_sweeps_ = 0;
      sweep_work_ += sweep_regions_ + 1;  // this sweep is not settled
    }
    if (f.sweep_done) {
      ++sweeps_;
      const bool busy = sweep_work_ * 100 >= std::max<uint64_t>(100, sweep_regions_);
      if (busy) {
        settled_sweeps_ = 0;
      } else if (sweeps_ >= 2) {
        settled_sweeps_ = std::min(settled_sweeps_ + 1, 4);
      }
      sweep_work_ = sweep_regions_ = 0;
    } else if (settled_sweeps_ > 0 &&
               sweep_work_ * 100 >= std::max<uint64_t>(100, sweep_regions_) && f.work > 0) {
      // Work again mid-sweep (a phase change): at the ceiling at once.
      settled_sweeps_ = 0;
    }
    // Halved per settled sweep, down to the floor (a sixteenth); at the
    // floor until the host's cost was measured once (a first period too
    // short to arm anything measures nothing).
    regions_ = measured_ ? ceiling_ / (1 << settled_sweeps_) : Floor();
    regions_ = std::clamp(regions_, std::min(Floor(), ceiling_), std::min(Cap(), ceiling_));
    // The debt is paid before the floor: the budget is the bound.
    if (debt_ > 0 && share > 0) regions_ *= std::max(0.0, 1 - debt_ / share);
  }

 private:
  // Regions per second that `busy` vCPU time over `length` affords.
  double Ceiling(absl::Duration busy, absl::Duration fault_cost, absl::Duration length) const {
    const double cost = std::max(1e-9, absl::ToDoubleSeconds(fault_cost));
    if (length <= absl::ZeroDuration() || busy <= absl::ZeroDuration()) return 0;
    const double per_probe = faults_per_probe_ * cost + host_per_probe_;
    const double probes = config_.stall_budget * absl::FDivDuration(busy, length) / per_probe;
    return std::min(probes / probes_, Cap());
  }
  double Cap() const {
    if (config_.max_bytes_per_second == 0) return 1e18;
    return static_cast<double>(config_.max_bytes_per_second) / region_bytes_;
  }
  double Floor() const {
    if (config_.min_bytes_per_second == 0) return ceiling_ / 16;
    return static_cast<double>(config_.min_bytes_per_second) / region_bytes_;
  }

  const ScanRateConfig config_;
  const uint64_t region_bytes_;
  const int probes_;
  const double max_faults_;  // per probe: one per vCPU
  double faults_per_probe_ = 1;
  double host_per_probe_ = 0;  // seconds
  double host_per_call_ = 0;   // seconds
  bool measured_ = false;      // host time seen once
  absl::Duration fault_cost_ = absl::Microseconds(55);
  double ceiling_ = 0;
  double regions_ = 0;
  double debt_ = 0;                              // seconds of stall owed (spent past the budget)
  uint64_t sweep_work_ = 0, sweep_regions_ = 0;  // this sweep so far
  int sweeps_ = 0;
  int settled_sweeps_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_SCAN_RATE_H_
