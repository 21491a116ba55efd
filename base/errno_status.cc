#include "base/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace numavm {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
    case ESRCH:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
    case ENFILE:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
    case E2BIG:
    case ERANGE:
    case EISDIR:
    case ENOTDIR:
    case ELOOP:
      return absl::InvalidArgumentError(message);
    case EBUSY:
    case EAGAIN:
    case ECONNREFUSED:
    case ETIMEDOUT:
      return absl::UnavailableError(message);
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::UnimplementedError(message);
    default:
      return absl::InternalError(message);
  }
}

}  // namespace numavm
