// The host-wide migration budget: one token bucket in bytes shared by the
// `numavm run` processes on the host, so that several VMs balancing at once
// cannot together migrate more than the host allows. (`attach` and
// `daemon` balance all their domains under one limit of their own.) It lives in a small file under
// the runtime directory (balancer/control/control_socket.h: RuntimeDir()), read and written under
// an exclusive flock; time is CLOCK_MONOTONIC, the same in every process.
// A file that is not a budget (corrupt, another version, a refill time that
// is negative or in the future) is reset.
//
// The rate is the last opener's: every process states the host's rate when
// it opens the budget.
#ifndef NUMAVM_BALANCER_ACTUATION_HOST_BUDGET_H_
#define NUMAVM_BALANCER_ACTUATION_HOST_BUDGET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "vmm/unique_fd.h"

namespace numavm {

class HostBudget {
 public:
  // Opens (creating `dir` 0700 and the file 0600) the budget
  // `dir`/migration-budget and sets its rate; the burst is one second's
  // worth.
  static absl::StatusOr<std::unique_ptr<HostBudget>> Open(const std::string& dir,
                                                          uint64_t bytes_per_second);

  // Spends up to `bytes`; returns how many were granted.
  uint64_t Take(uint64_t bytes);
  // Returns unused bytes.
  void GiveBack(uint64_t bytes);
  uint64_t bytes_per_second() const { return rate_; }
  // Empty while every update reached the file; else one line saying that
  // the host-wide limit was not in force (e.g. a full filesystem).
  std::string Problem() const;

 private:
  HostBudget(UniqueFd fd, uint64_t rate, std::string path)
      : fd_(std::move(fd)), rate_(rate), path_(std::move(path)) {}
  // Applies `change` (tokens after refill -> new tokens) under the lock;
  // returns the refilled tokens before the change.
  template <typename F>
  double Update(F change);

  UniqueFd fd_;
  const uint64_t rate_;
  const std::string path_;
  std::atomic<uint64_t> failed_writes_{0};
  mutable absl::Mutex mu_;
  std::string first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_HOST_BUDGET_H_
