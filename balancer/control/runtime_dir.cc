#include "balancer/control/runtime_dir.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/errno_status.h"

namespace numavm {

std::string RuntimeDir() {
  if (const char* d = std::getenv("NUMAVM_RUNTIME_DIR"); d != nullptr && *d != '\0') return d;
  if (geteuid() == 0) return "/run/numavm";
  if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
    return absl::StrCat(x, "/numavm");
  }
  return absl::StrCat("/tmp/numavm-", geteuid());
}

absl::Status CheckRuntimeDir(const std::string& dir) {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, absl::StrCat("runtime dir ", dir));
  auto refuse = [&](absl::string_view why) {
    return absl::FailedPreconditionError(
        absl::StrCat("runtime dir ", dir, ": ", why,
                     "; refusing it (set NUMAVM_RUNTIME_DIR to a directory of your own, mode "
                     "0700)"));
  };
  if (S_ISLNK(st.st_mode)) return refuse("is a symlink");
  if (!S_ISDIR(st.st_mode)) return refuse("is not a directory");
  if (st.st_uid != geteuid()) {
    return refuse(absl::StrCat("is owned by uid ", st.st_uid, ", not by uid ", geteuid()));
  }
  if ((st.st_mode & 077) != 0) {
    return refuse(
        absl::StrFormat("has mode 0%o: others may use it (want 0700)", st.st_mode & 0777));
  }
  return absl::OkStatus();
}

absl::Status EnsureRuntimeDir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoStatus(errno, absl::StrCat("mkdir ", dir));
  }
  return CheckRuntimeDir(dir);
}

}  // namespace numavm
