// A token bucket in bytes: migrations may use `bytes_per_second` on average
// and burst up to `burst_bytes`. Pure: time is an input.
#ifndef NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_
#define NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_

#include <cstdint>

#include "absl/time/time.h"

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

 private:
  void Refill(absl::Duration now);

  const double rate_;  // bytes per second
  const double burst_;
  double tokens_;
  absl::Duration last_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_RATE_LIMITER_H_
