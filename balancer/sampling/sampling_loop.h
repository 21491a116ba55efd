// Drives a sampler from its own thread: one Collect per scan period, each
// batch handed to a consumer (the statistics, later the policy). A sampler
// error stops sampling for this VM and is kept for the report; the VM runs on.
#ifndef NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_
#define NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "balancer/sampling/access_sampler.h"

namespace numavm {

class SamplingLoop final {
 public:
  using Consumer = std::function<void(const AccessBatch&)>;
  // Cumulative CPU time of the VM's vCPU threads; when given, no window is
  // armed after a period in which the VM was idle (ShouldScan).
  using VcpuBusy = std::function<absl::Duration()>;

  SamplingLoop(AccessSampler& sampler, absl::Duration period, Consumer consumer,
               VcpuBusy vcpu_busy = nullptr)
      : sampler_(sampler),
        consumer_(std::move(consumer)),
        vcpu_busy_(std::move(vcpu_busy)),
        period_(period) {}
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
  // From the next period on (the consumer may call it: adaptive period).
  void set_period(absl::Duration period);
  absl::Duration period() const;

 private:
  void Loop();
  void CollectOnce();

  AccessSampler& sampler_;
  const Consumer consumer_;
  const VcpuBusy vcpu_busy_;
  absl::Duration last_busy_;  // sampling thread only
  std::thread thread_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool sampler_stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Duration cpu_time_ ABSL_GUARDED_BY(mu_);
  uint64_t idle_periods_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Duration period_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_SAMPLING_LOOP_H_
