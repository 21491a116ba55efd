#include "vmm/run_control.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace numavm {

absl::string_view RunEndName(RunEnd end) {
  switch (end) {
    case RunEnd::kCompleted:
      return "completed";
    case RunEnd::kGuestFailed:
      return "guest-failed";
    case RunEnd::kGuestFault:
      return "guest-fault";
    case RunEnd::kTimeout:
      return "timeout";
    case RunEnd::kStopped:
      return "stopped";
    case RunEnd::kError:
      return "error";
  }
  return "?";
}

void RunControl::VcpuExited(uint32_t status) {
  absl::MutexLock lock(&mu_);
  if (status != 0) any_failed_ = true;
  if (--running_ == 0 && !ended_) {
    EndLocked(
        any_failed_ ? RunEnd::kGuestFailed : RunEnd::kCompleted,
        any_failed_ ? "the guest exited with a non-zero status" : "the guest exited normally");
  }
}

void RunControl::End(RunEnd end, std::string message) {
  absl::MutexLock lock(&mu_);
  if (!ended_) EndLocked(end, std::move(message));
}

void RunControl::EndLocked(RunEnd end, std::string message) {
  ended_ = true;
  end_ = end;
  message_ = std::move(message);
  stopping_.store(true, std::memory_order_release);
  if (kick_) kick_();
}

void RunControl::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&ended_), d);
}

void RunControl::Wait(absl::Time deadline, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (!mu_.AwaitWithDeadline(absl::Condition(&ended_), deadline)) {
    EndLocked(RunEnd::kTimeout,
              absl::StrCat("timed out after ", absl::FormatDuration(timeout), "; VM stopped"));
  }
}

RunEnd RunControl::end() const {
  absl::MutexLock lock(&mu_);
  return end_;
}

std::string RunControl::message() const {
  absl::MutexLock lock(&mu_);
  return message_;
}

}  // namespace numavm
