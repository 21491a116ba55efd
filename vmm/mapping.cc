#include "vmm/mapping.h"

#include <sys/mman.h>

#include <cerrno>

#include "vmm/status.h"

namespace numavm {

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Reset();
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

absl::StatusOr<Mapping> Mapping::Map(size_t size, int prot, int flags, int fd, off_t offset,
                                     const char* what) {
  void* base = ::mmap(nullptr, size, prot, flags, fd, offset);
  if (base == MAP_FAILED) return ErrnoStatus(errno, what);
  return Mapping(base, size);
}

void Mapping::Reset() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
}

}  // namespace numavm
