// The runtime directory: where numavm processes keep their control sockets
// and the host migration budget. It must be the user's own: a directory
// (not a symlink) owned by the effective user with no access for group or
// others, so that another user cannot serve a forged socket or budget.
#ifndef NUMAVM_BALANCER_CONTROL_RUNTIME_DIR_H_
#define NUMAVM_BALANCER_CONTROL_RUNTIME_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace numavm {

// $NUMAVM_RUNTIME_DIR, else /run/numavm for root, else
// $XDG_RUNTIME_DIR/numavm, else /tmp/numavm-UID.
std::string RuntimeDir();

// OK when `dir` is a directory (lstat: a symlink is refused) owned by the
// effective user with mode 0700 or narrower; NotFound when it does not
// exist; FailedPrecondition, naming what is wrong, otherwise.
absl::Status CheckRuntimeDir(const std::string& dir);

// Creates `dir` (mode 0700; its parent must exist) if it is missing, then
// CheckRuntimeDir.
absl::Status EnsureRuntimeDir(const std::string& dir);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_CONTROL_RUNTIME_DIR_H_
