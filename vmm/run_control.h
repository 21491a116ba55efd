// How a running VM ends: every vCPU exits, one faults, a timeout, or a stop
// request. The first reason wins; the others are ignored.
#ifndef NUMAVM_VMM_RUN_CONTROL_H_
#define NUMAVM_VMM_RUN_CONTROL_H_

#include <atomic>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace numavm {

enum class RunEnd {
  kCompleted,    // every vCPU exited with status 0
  kGuestFailed,  // every vCPU exited, at least one with a non-zero status
  kGuestFault,   // the guest did something the VMM does not allow
  kTimeout,      // --timeout passed
  kStopped,      // stopped from outside (signal, caller)
  kError,        // a host-side failure (KVM, memory)
};

absl::string_view RunEndName(RunEnd end);

class RunControl final {
 public:
  explicit RunControl(int vcpus) : running_(vcpus) {}

  // Called when stopping begins, to kick vCPUs out of KVM_RUN.
  void SetKick(std::function<void()> kick) { kick_ = std::move(kick); }

  void VcpuExited(uint32_t status);
  // Ends the run with `end` unless it has already ended.
  void End(RunEnd end, std::string message);

  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // Sleeps up to `d`; returns early when the run ends.
  void Sleep(absl::Duration d);
  // Waits until the run ends or `deadline`; then ends it with kTimeout.
  void Wait(absl::Time deadline, absl::Duration timeout);

  RunEnd end() const;
  std::string message() const;

 private:
  void EndLocked(RunEnd end, std::string message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::function<void()> kick_;
  std::atomic<bool> stopping_{false};
  mutable absl::Mutex mu_;
  int running_ ABSL_GUARDED_BY(mu_);
  bool any_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  RunEnd end_ ABSL_GUARDED_BY(mu_) = RunEnd::kCompleted;
  std::string message_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_VMM_RUN_CONTROL_H_
