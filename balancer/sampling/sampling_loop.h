// Drives a sampler from its own thread: one Collect per scan period, each
// batch handed to a consumer (the balancer), whose outcome sets the next
// period; then the scan control's next window is armed (policy/scan_control.h:
// the same control `numavm simulate` drives). A sampler error stops sampling
// for this VM and is kept for the report; the VM runs on.
#ifndef NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_
#define NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_

#include <functional>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/access_sampler.h"

namespace numavm {

class SamplingLoop final {
 public:
  // Returns what the period did (policy/scan_period.h), for the scan control.
  using Consumer = std::function<PeriodOutcome(const AccessBatch&)>;
  // Cumulative CPU time of the VM's vCPU threads; when given, no window is
  // armed after a period in which the VM was idle (ShouldScan).
  using VcpuBusy = std::function<absl::Duration()>;

  SamplingLoop(AccessSampler& sampler, const ScanConfig& scan, Consumer consumer,
               VcpuBusy vcpu_busy = nullptr)
      : sampler_(sampler),
        consumer_(std::move(consumer)),
        vcpu_busy_(std::move(vcpu_busy)),
        scan_config_(scan),
        period_(scan.period) {}
  ~SamplingLoop() { Stop(); }

  absl::Status Start();
  // Collects once more, stops the sampler and the thread. Idempotent.
  void Stop();

  // The first error, if sampling had to stop early.
  absl::Status status() const;
  // CPU time the sampling thread used (the balancer's cost users see).
  absl::Duration cpu_time() const;
  // Periods in which the VM was idle and nothing was armed.
  uint64_t idle_periods() const;
  absl::Duration period() const;
  // Adaptive-period changes so far, and the longest period allowed.
  uint64_t period_changes() const;
  absl::Duration period_max() const;
  // The scan rate (bytes of guest memory per second) now and its ceiling,
  // and the share of the vCPUs' busy time the scan cost: fault round trips
  // and this thread's CPU (arming, collecting, balancing).
  double scan_rate() const;
  double scan_rate_ceiling() const;
  double stall_share() const;
  // This thread's time per armed probe, as the stall budget charges it.
  absl::Duration host_cost_per_probe() const;
  // ... and per arming call (a range of neighbouring probes): smoothed,
  // the last periods' figure.
  absl::Duration host_cost_per_call() const;
  // Arming calls so far (ScanControl::arm_calls).
  uint64_t arm_calls() const;
  // The pages of each probe run the scan arms (1: single pages).
  uint64_t probe_run_pages() const;
  // The probe pages of each region the scan arms (1 on 2 MiB backing
  // pages; 0 before a regions-mode plan).
  int probes_per_region() const;
  // Regions visited again at once because their first visit asked to move
  // them (ScanControl::revisits).
  uint64_t revisits() const;
  // Regions the sweep passed over because they had no memory
  // (ScanControl::regions_passed).
  uint64_t regions_passed() const;
  // Sweeps restarted coarse because half a period's regions dissented
  // from where they had settled, or followed a vCPU (or group) to a new node
  // (ScanControl::coarse_restarts).
  uint64_t coarse_restarts() const;
  // Where this thread's CPU went, summed over the run: arming probes,
  // collecting samples, the balancer's decisions, and its page migrations
  // (which the stall budget does not charge). `view` is the part of
  // `decide` spent in the placement view's calls (page-node queries,
  // where vCPUs ran, other work, pinning); the rest is the policy.
  struct HostSplit {
    absl::Duration arm, collect, decide, migrate, view;
  };
  HostSplit host_split() const;

 private:
  void Loop();
  void CollectOnce();

  AccessSampler& sampler_;
  const Consumer consumer_;
  const VcpuBusy vcpu_busy_;
  absl::Duration last_busy_;        // sampling thread only
  absl::Duration last_thread_cpu_;  // sampling thread only
  const ScanConfig scan_config_;
  std::optional<ScanControl> scan_;  // made at Start; then the sampling thread's
  ScanControl::Resident resident_;   // the sampler's Resident, for the sweep
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool sampler_stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Duration cpu_time_ ABSL_GUARDED_BY(mu_);
  uint64_t idle_periods_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration period_ ABSL_GUARDED_BY(mu_);
  uint64_t period_changes_ ABSL_GUARDED_BY(mu_) = 0;
  double rate_ ABSL_GUARDED_BY(mu_) = 0, ceiling_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration host_per_probe_ ABSL_GUARDED_BY(mu_);
  absl::Duration host_per_call_ ABSL_GUARDED_BY(mu_);
  uint64_t run_pages_ ABSL_GUARDED_BY(mu_) = 1;
  int probes_per_region_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t revisits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t regions_passed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t coarse_restarts_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t arm_calls_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration stalled_ ABSL_GUARDED_BY(mu_), busy_ ABSL_GUARDED_BY(mu_);
  HostSplit split_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_
