// ioctl(2) with errno turned into a Status (through base/errno_status.h).
#ifndef NUMAVM_VMM_STATUS_H_
#define NUMAVM_VMM_STATUS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/errno_status.h"

namespace numavm {

// ioctl(2) with errno turned into a Status; returns the non-negative result.
absl::StatusOr<int> Ioctl(int fd, unsigned long request, void* arg, absl::string_view what);
absl::StatusOr<int> Ioctl(int fd, unsigned long request, unsigned long arg, absl::string_view what);

}  // namespace numavm

#endif  // NUMAVM_VMM_STATUS_H_
