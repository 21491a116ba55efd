#include "vmm/status.h"

#include <sys/ioctl.h>

#include <cerrno>

namespace numavm {

absl::StatusOr<int> Ioctl(int fd, unsigned long request, void* arg, absl::string_view what) {
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
