#include "balancer/sampling/sampling_loop.h"

#include "balancer/policy/scan_gate.h"
#include "balancer/sampling/thread_cpu.h"

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
  if (absl::Status s = sampler_.Arm(scan_.NextArm()); !s.ok()) {
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
  absl::Status s = sampler_.Collect(batch);
  PeriodOutcome outcome;
  if (consumer_ && !batch.empty()) outcome = consumer_(batch);
  bool idle = false;
  if (vcpu_busy_) {
    absl::Duration busy = vcpu_busy_();
    idle = !ShouldScan(busy - last_busy_, period());
    last_busy_ = busy;
  }
  const absl::Duration next = scan_.OnPeriod(outcome);
  {
    absl::MutexLock lock(&mu_);
    period_ = next;
    period_changes_ = scan_.period_changes();
    if (idle) ++idle_periods_;
  }
  if (!idle && s.ok()) s = sampler_.Arm(scan_.NextArm());
  if (!s.ok()) {
    sampler_.Stop();
    absl::MutexLock lock(&mu_);
    status_ = s;
    sampler_stopped_ = true;
  }
}

void SamplingLoop::Loop() {
  const absl::Duration start_cpu = ThreadCpuTime();
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
