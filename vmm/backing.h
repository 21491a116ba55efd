// How guest RAM is backed on the host.
#ifndef NUMAVM_VMM_BACKING_H_
#define NUMAVM_VMM_BACKING_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vmm/mapping.h"
#include "vmm/unique_fd.h"

namespace numavm {

enum class Backing {
  kMemfd,    // shared memfd: trackable with userfaultfd minor faults (default)
  kAnon,     // private anonymous memory
  kHugetlb,  // 2 MiB hugetlbfs pages (must be reserved)
  kThp,      // anonymous memory with MADV_HUGEPAGE
};

absl::StatusOr<Backing> ParseBacking(absl::string_view name);
absl::string_view BackingName(Backing backing);
// Granularity guest memory sizes must be a multiple of.
uint64_t BackingAlignment(Backing backing);

// One contiguous host mapping of guest RAM (and the memfd behind it, if any).
struct BackedMapping {
  UniqueFd fd;  // memfd or hugetlb memfd; invalid for anonymous memory
  Mapping mapping;
};

// Creates the host memory for `bytes` of guest RAM. `name` labels the memfd.
absl::StatusOr<BackedMapping> CreateBacking(Backing backing, uint64_t bytes,
                                            const std::string& name);

}  // namespace numavm

#endif  // NUMAVM_VMM_BACKING_H_
