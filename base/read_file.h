// Reading small input files (configs, topologies, traces, payload headers):
// only regular files, never more than a stated size.
#ifndef NUMAVM_BASE_READ_FILE_H_
#define NUMAVM_BASE_READ_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

// Limits for the files numavm reads (documented in docs/hardening.md).
inline constexpr uint64_t kMaxConfigFileBytes = 1ull << 20;  // TOML configs, topologies
inline constexpr uint64_t kMaxTraceFileBytes = 4ull << 30;   // access traces

// An open, regular file: descriptor and size. Closes on destruction.
class RegularFile {
 public:
  // Opens `path` for reading. Errors (one line, naming `what` and the path):
  // cannot open (errno), not a regular file (a directory, device, FIFO,
  // socket), larger than `max_bytes`. The messages read "<what> <path>: ...".
  static absl::StatusOr<RegularFile> Open(const std::string& path, absl::string_view what,
                                          uint64_t max_bytes);
  RegularFile(RegularFile&& other) noexcept;
  RegularFile& operator=(RegularFile&&) = delete;
  ~RegularFile();

  uint64_t size() const { return size_; }
  // Reads exactly `length` bytes at `offset` into `out` (a short file is an
  // error naming the file).
  absl::Status ReadAt(uint64_t offset, uint64_t length, void* out) const;
  // The whole file.
  absl::StatusOr<std::string> ReadAll() const;

 private:
  RegularFile(int fd, uint64_t size, std::string label)
      : fd_(fd), size_(size), label_(std::move(label)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string label_;  // "<what> <path>"
};

// The whole regular file at `path`, at most `max_bytes` (see RegularFile::Open).
absl::StatusOr<std::string> ReadRegularFile(const std::string& path, absl::string_view what,
                                            uint64_t max_bytes = kMaxConfigFileBytes);

}  // namespace numavm

#endif  // NUMAVM_BASE_READ_FILE_H_
