#include "balancer/sampling/sampling_loop.h"

#include <algorithm>

#include "balancer/policy/scan_gate.h"
#include "base/thread_cpu.h"

namespace numavm {

absl::Status SamplingLoop::Start() {
  if (vcpu_busy_) last_busy_ = vcpu_busy_();
  if (absl::Status s = sampler_.Start(); !s.ok()) {
    sampler_.Stop();
    absl::MutexLock lock(&mu_);
    status_ = s;
    sampler_stopped_ = true;
    return s;
  }
  scan_.emplace(sampler_.Coverage(), sampler_.ArmAlignment(), scan_config_, sampler_.FaultCost());
  resident_ = [this](const GfnRange& region) { return sampler_.Resident(region); };
  {
    absl::MutexLock lock(&mu_);
    rate_ = scan_->rate_bytes_per_second();
    ceiling_ = scan_->ceiling_bytes_per_second();
    period_ = scan_->period();
  }
  const absl::Duration arm_start = ThreadCpuTime();
  absl::Status armed = sampler_.Arm(scan_->NextArm(resident_));
  {
    absl::MutexLock lock(&mu_);
    split_.arm += ThreadCpuTime() - arm_start;
    arm_calls_ = scan_->arm_calls();
  }
  if (absl::Status s = armed; !s.ok()) {
    sampler_.Stop();
    absl::MutexLock lock(&mu_);
    status_ = s;
    sampler_stopped_ = true;
    return s;
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void SamplingLoop::CollectOnce() {
  {
    absl::MutexLock lock(&mu_);
    if (sampler_stopped_) return;
  }
  AccessBatch batch;
  const absl::Duration collect_start = ThreadCpuTime();
  absl::Status s = sampler_.Collect(batch);
  const absl::Duration decide_start = ThreadCpuTime();
  PeriodOutcome outcome;
  if (consumer_ && !batch.empty()) outcome = consumer_(batch);
  const absl::Duration decide_end = ThreadCpuTime();
  bool idle = false;
  // Without the vCPUs' CPU time, assume every vCPU was busy.
  absl::Duration busy = period() * scan_config_.vcpus;
  if (vcpu_busy_) {
    const absl::Duration now = vcpu_busy_();
    // A vCPU thread that exited takes its CPU time with it: never negative.
    busy = std::max(absl::ZeroDuration(), now - last_busy_);
    idle = !ShouldScan(busy, period());
    last_busy_ = now;
  }
  const absl::Duration cost = sampler_.FaultCost();
  // This thread's CPU since the last period (arming, collecting, the
  // balancer's decisions): on a busy host it is vCPU time too. Its page
  // migrations are not the scan's: they have a limit of their own.
  const absl::Duration thread_now = ThreadCpuTime();
  const absl::Duration host =
      std::max(absl::ZeroDuration(), thread_now - last_thread_cpu_ - outcome.move_cpu_time);
  const absl::Duration next = scan_->OnPeriod({outcome, busy, batch.size(), cost, host});
  {
    absl::MutexLock lock(&mu_);
    period_ = next;
    period_changes_ = scan_->period_changes();
    // The rate while the VM ran (not the idle ending's).
    if (busy > absl::ZeroDuration()) {
      rate_ = scan_->rate_bytes_per_second();
      ceiling_ = scan_->ceiling_bytes_per_second();
      host_per_probe_ = scan_->host_cost_per_probe();
      host_per_call_ = scan_->host_cost_per_call();
      run_pages_ = scan_->run_pages();
      probes_per_region_ = scan_->probes_per_region();
      revisits_ = scan_->revisits();
      regions_passed_ = scan_->regions_passed();
      coarse_restarts_ = scan_->coarse_restarts();
    }
    stalled_ += cost * static_cast<double>(batch.size()) + host;
    split_.collect += decide_start - collect_start;
    const absl::Duration decide = decide_end - decide_start;
    split_.decide += std::max(absl::ZeroDuration(), decide - outcome.move_cpu_time);
    split_.view += std::min(outcome.view_cpu_time,
                            std::max(absl::ZeroDuration(), decide - outcome.move_cpu_time));
    split_.migrate += std::min(decide, outcome.move_cpu_time);
    busy_ += busy;
    if (idle) ++idle_periods_;
  }
  last_thread_cpu_ = thread_now;
  if (!idle && s.ok()) {
    const absl::Duration arm_start = ThreadCpuTime();
    s = sampler_.Arm(scan_->NextArm(resident_));
    absl::MutexLock lock(&mu_);
    split_.arm += ThreadCpuTime() - arm_start;
    arm_calls_ = scan_->arm_calls();
  }
  if (!s.ok()) {
    sampler_.Stop();
    absl::MutexLock lock(&mu_);
    status_ = s;
    sampler_stopped_ = true;
  }
}

void SamplingLoop::Loop() {
  const absl::Duration start_cpu = ThreadCpuTime();
  last_thread_cpu_ = start_cpu;
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), period_);
      if (stopping_) break;
    }
    CollectOnce();
    absl::MutexLock lock(&mu_);
    cpu_time_ = ThreadCpuTime() - start_cpu;
  }
  CollectOnce();
  absl::MutexLock lock(&mu_);
  cpu_time_ = ThreadCpuTime() - start_cpu;
}

void SamplingLoop::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  if (!sampler_stopped_) {
    sampler_.Stop();
    sampler_stopped_ = true;
  }
}

absl::Duration SamplingLoop::period_max() const {
  absl::MutexLock lock(&mu_);
  return scan_ ? scan_->period_max() : scan_config_.period;
}

double SamplingLoop::scan_rate() const {
  absl::MutexLock lock(&mu_);
  return rate_;
}

double SamplingLoop::scan_rate_ceiling() const {
  absl::MutexLock lock(&mu_);
  return ceiling_;
}

absl::Duration SamplingLoop::host_cost_per_probe() const {
  absl::MutexLock lock(&mu_);
  return host_per_probe_;
}

absl::Duration SamplingLoop::host_cost_per_call() const {
  absl::MutexLock lock(&mu_);
  return host_per_call_;
}

uint64_t SamplingLoop::arm_calls() const {
  absl::MutexLock lock(&mu_);
  return arm_calls_;
}

uint64_t SamplingLoop::probe_run_pages() const {
  absl::MutexLock lock(&mu_);
  return run_pages_;
}

int SamplingLoop::probes_per_region() const {
  absl::MutexLock lock(&mu_);
  return probes_per_region_;
}

uint64_t SamplingLoop::regions_passed() const {
  absl::MutexLock lock(&mu_);
  return regions_passed_;
}

uint64_t SamplingLoop::coarse_restarts() const {
  absl::MutexLock lock(&mu_);
  return coarse_restarts_;
}

uint64_t SamplingLoop::revisits() const {
  absl::MutexLock lock(&mu_);
  return revisits_;
}

SamplingLoop::HostSplit SamplingLoop::host_split() const {
  absl::MutexLock lock(&mu_);
  return split_;
}

double SamplingLoop::stall_share() const {
  absl::MutexLock lock(&mu_);
  return busy_ > absl::ZeroDuration() ? absl::FDivDuration(stalled_, busy_) : 0.0;
}

uint64_t SamplingLoop::period_changes() const {
  absl::MutexLock lock(&mu_);
  return period_changes_;
}

absl::Duration SamplingLoop::period() const {
  absl::MutexLock lock(&mu_);
  return period_;
}

absl::Status SamplingLoop::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

uint64_t SamplingLoop::idle_periods() const {
  absl::MutexLock lock(&mu_);
  return idle_periods_;
}

absl::Duration SamplingLoop::cpu_time() const {
  absl::MutexLock lock(&mu_);
  return cpu_time_;
}

}  // namespace numavm
