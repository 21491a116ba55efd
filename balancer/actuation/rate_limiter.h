// A token bucket in bytes: migrations may use `bytes_per_second` on average
// and burst up to `burst_bytes`. Pure: time is an input - unless linked to
// the host-wide budget (host_budget.h), which every grant must also pass.
// Thread-safe: one VM's limiter is shared by the threads that migrate its
// pages (the balancer's and --migrate-churn's); the host budget locks its
// own file.
#ifndef NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_
#define NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_

#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "balancer/actuation/host_budget.h"

namespace numavm {

class RateLimiter {
 public:
  RateLimiter(uint64_t bytes_per_second, uint64_t burst_bytes, absl::Duration now);

  // Bytes that may be spent at `now` (refills first).
  uint64_t Available(absl::Duration now);
  // Spends up to `bytes`; returns how many were granted (never more than
  // available).
  uint64_t Take(uint64_t bytes, absl::Duration now);
  // Returns unused bytes (e.g. pages that failed to move).
  void GiveBack(uint64_t bytes);
  // Grants are then also taken from (and returned to) `host`; null unlinks.
  // Set before any thread takes from the limiter.
  void set_host(HostBudget* host) { host_ = host; }

 private:
  void Refill(absl::Duration now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const double rate_;  // bytes per second
  const double burst_;
  absl::Mutex mu_;
  double tokens_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_ ABSL_GUARDED_BY(mu_);
  HostBudget* host_ = nullptr;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_
