// The one place where errno becomes an absl::Status, for every layer.
#ifndef NUMAVM_BASE_ERRNO_STATUS_H_
#define NUMAVM_BASE_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace numavm {

// A Status for errno `err` whose message is "<what>: <error text>". Codes:
// ENOENT/ESRCH NotFound (a file or process that is not there), EACCES/EPERM
// PermissionDenied, ENOMEM/ENOSPC/EMFILE/ENFILE/EDQUOT ResourceExhausted,
// EINVAL/E2BIG/ERANGE/EISDIR/ENOTDIR/ELOOP InvalidArgument, EBUSY/EAGAIN/
// ECONNREFUSED/ETIMEDOUT Unavailable, ENOSYS/EOPNOTSUPP Unimplemented,
// anything else Internal.
absl::Status ErrnoStatus(int err, absl::string_view what);

}  // namespace numavm

#endif  // NUMAVM_BASE_ERRNO_STATUS_H_
