// What /proc/meminfo says about host memory.
#ifndef NUMAVM_VMM_HOST_MEMORY_H_
#define NUMAVM_VMM_HOST_MEMORY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

struct HostMemoryInfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
  uint64_t huge_pages_total = 0;
  uint64_t huge_pages_free = 0;
};

absl::StatusOr<HostMemoryInfo> ReadHostMemoryInfo(const char* path = "/proc/meminfo");
HostMemoryInfo ParseMeminfo(absl::string_view text);

}  // namespace numavm

#endif  // NUMAVM_VMM_HOST_MEMORY_H_
