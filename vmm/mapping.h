// Owns an mmap(2) region; unmaps it once.
#ifndef NUMAVM_VMM_MAPPING_H_
#define NUMAVM_VMM_MAPPING_H_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/status/statusor.h"

namespace numavm {

class Mapping final {
 public:
  Mapping() = default;
  Mapping(Mapping&& other) noexcept
      : base_(std::exchange(other.base_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  Mapping& operator=(Mapping&& other) noexcept;
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  ~Mapping() { Reset(); }

  // mmap(2) with the result owned; `what` names the mapping in errors.
  [[nodiscard]] static absl::StatusOr<Mapping> Map(size_t size, int prot, int flags, int fd,
                                                   off_t offset, const char* what);

  uint8_t* data() const { return static_cast<uint8_t*>(base_); }
  size_t size() const { return size_; }
  void Reset();

 private:
  Mapping(void* base, size_t size) : base_(base), size_(size) {}
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_MAPPING_H_
