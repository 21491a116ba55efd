// Where guest pages live: a move_pages(2) query (no pages are moved).
#ifndef NUMAVM_BALANCER_ACTUATION_PAGE_NODES_H_
#define NUMAVM_BALANCER_ACTUATION_PAGE_NODES_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <span>

#include "absl/status/statusor.h"

namespace numavm {

struct HostRange {
  uintptr_t start = 0;
  uint64_t bytes = 0;
};

struct NodeUsage {
  std::map<int, uint64_t> bytes_per_node;
  uint64_t not_present_bytes = 0;  // never touched, or swapped out
  uint64_t other_bytes = 0;        // the kernel reported another error
};

// Queries every `stride` bytes of `ranges` in process `pid` (0: this one)
// and counts `stride` bytes per answer. Use the backing's page size as stride.
absl::StatusOr<NodeUsage> QueryPageNodes(pid_t pid, std::span<const HostRange> ranges,
                                         uint64_t stride = 4096);

// Node id of each page address in process `pid` (0: this one), or a
// negative errno (-ENOENT: not present), in batches.
absl::StatusOr<std::vector<int>> QueryNodesOf(pid_t pid, const std::vector<void*>& pages);
// The same for `addresses` of which some may be 0 (none: -1 there).
absl::StatusOr<std::vector<int>> QueryNodesOfAddresses(pid_t pid,
                                                       const std::vector<uintptr_t>& addresses);

// Maps back the pages of shared file memory (memfd, hugetlbfs) that are in
// the page cache but not mapped, e.g. because the hinting-fault scanner zapped
// them, so that a move_pages query sees where they live. Never allocates:
// only pages mincore(2) reports resident are touched. Call it only when no
// sampler is armed on the range.
absl::Status MapResidentPages(const HostRange& range, uint64_t page_bytes);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_PAGE_NODES_H_
