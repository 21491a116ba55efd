#include "balancer/actuation/rate_limiter.h"

#include <algorithm>

namespace numavm {

RateLimiter::RateLimiter(uint64_t bytes_per_second, uint64_t burst_bytes, absl::Duration now)
    : rate_(static_cast<double>(bytes_per_second)),
      burst_(static_cast<double>(std::max(burst_bytes, uint64_t{1}))),
      tokens_(burst_),
      last_(now) {}

void RateLimiter::Refill(absl::Duration now) {
  if (now > last_) {
    tokens_ = std::min(burst_, tokens_ + rate_ * absl::ToDoubleSeconds(now - last_));
    last_ = now;
  }
}

uint64_t RateLimiter::Available(absl::Duration now) {
  absl::MutexLock l(&mu_);
  Refill(now);
  return static_cast<uint64_t>(tokens_);
}

uint64_t RateLimiter::Take(uint64_t bytes, absl::Duration now) {
  absl::MutexLock l(&mu_);
  Refill(now);
  uint64_t granted = std::min<uint64_t>(bytes, static_cast<uint64_t>(tokens_));
  if (host_ != nullptr && granted > 0) granted = host_->Take(granted);
  tokens_ -= static_cast<double>(granted);
  return granted;
}

void RateLimiter::GiveBack(uint64_t bytes) {
  {
    absl::MutexLock l(&mu_);
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(bytes));
  }
  if (host_ != nullptr && bytes > 0) host_->GiveBack(bytes);
}

}  // namespace numavm
