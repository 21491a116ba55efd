#include "base/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/size.h"

namespace numavm {

absl::StatusOr<RegularFile> RegularFile::Open(const std::string& path, absl::string_view what,
                                              uint64_t max_bytes) {
  std::string label = absl::StrCat(what, " ", path);
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat(label, ": cannot open"));
  RegularFile file(fd, 0, std::move(label));
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus(errno, absl::StrCat(file.label_, ": fstat"));
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(file.label_, ": not a regular file"));
  }
  file.size_ = static_cast<uint64_t>(st.st_size);
  if (file.size_ > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(file.label_, ": ", FormatSize(file.size_),
                                                   ", more than the ", FormatSize(max_bytes),
                                                   " such a file may have"));
  }
  return file;
}

RegularFile::RegularFile(RegularFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), size_(other.size_), label_(std::move(other.label_)) {}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status RegularFile::ReadAt(uint64_t offset, uint64_t length, void* out) const {
  if (offset > size_ || length > size_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        label_, ": truncated (", length, " bytes at offset ", offset, " of ", size_, ")"));
  }
  char* dst = static_cast<char*>(out);
  uint64_t done = 0;
  while (done < length) {
    const ssize_t n = ::pread(fd_, dst + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, absl::StrCat(label_, ": read"));
    }
    // The file shrank under us.
    if (n == 0) return absl::InvalidArgumentError(absl::StrCat(label_, ": truncated while read"));
    done += static_cast<uint64_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> RegularFile::ReadAll() const {
  std::string text(size_, '\0');
  if (absl::Status s = ReadAt(0, size_, text.data()); !s.ok()) return s;
  return text;
}

absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            uint64_t max_bytes) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, what, max_bytes);
  if (!file.ok()) return file.status();
  return file->ReadAll();
}

}  // namespace numavm
