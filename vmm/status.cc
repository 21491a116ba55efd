#include "vmm/status.h"

#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace numavm {

absl::Status ErrnoStatus(int err, absl::string_view what) {
  std::string message = absl::StrCat(what, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOMEM:
    case ENOSPC:
    case EMFILE:
      return absl::ResourceExhaustedError(message);
    case EINVAL:
    case E2BIG:
      return absl::InvalidArgumentError(message);
    case EBUSY:
    case EAGAIN:
      return absl::UnavailableError(message);
    case ENOSYS:
    case EOPNOTSUPP:
      return absl::UnimplementedError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<int> Ioctl(int fd, unsigned long request, void* arg,
                          absl::string_view what) {
  int rc;
  do {
    rc = ::ioctl(fd, request, arg);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) return ErrnoStatus(errno, what);
  return rc;
}

absl::StatusOr<int> Ioctl(int fd, unsigned long request, unsigned long arg,
                          absl::string_view what) {
  return Ioctl(fd, request, reinterpret_cast<void*>(arg), what);
}

}  // namespace numavm
