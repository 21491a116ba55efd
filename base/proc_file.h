// Reads a small /proc file with plain read(2). Thread files vanish when the
// thread exits, and libstdc++ streams can throw on that read error (ESRCH);
// this never throws and returns an empty string instead.
#ifndef NUMAVM_BASE_PROC_FILE_H_
#define NUMAVM_BASE_PROC_FILE_H_

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace numavm {

inline std::string ReadProcFile(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace numavm

#endif  // NUMAVM_BASE_PROC_FILE_H_
