// The one place where errno becomes an absl::Status.
#ifndef NUMAVM_VMM_STATUS_H_
#define NUMAVM_VMM_STATUS_H_

#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace numavm {

// Maps errno `err` to a Status whose message names `what` and the error text.
absl::Status ErrnoStatus(int err, absl::string_view what);

// ioctl(2) with errno turned into a Status; returns the non-negative result.
absl::StatusOr<int> Ioctl(int fd, unsigned long request, void* arg,
                          absl::string_view what);
absl::StatusOr<int> Ioctl(int fd, unsigned long request, unsigned long arg,
                          absl::string_view what);

}  // namespace numavm

#endif  // NUMAVM_VMM_STATUS_H_
