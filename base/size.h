// Human sizes: "512M", "4G", "65536".
#ifndef NUMAVM_BASE_SIZE_H_
#define NUMAVM_BASE_SIZE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

// Bytes from a number with an optional K, M, G or T suffix (powers of 1024,
// optional trailing "iB" or "B").
absl::StatusOr<uint64_t> ParseSize(absl::string_view text);
// "512 MiB", "4 GiB", "12345 B".
std::string FormatSize(uint64_t bytes);

}  // namespace numavm

#endif  // NUMAVM_BASE_SIZE_H_
