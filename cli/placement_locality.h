// Placement locality of a bundled VM at the end of its run: of the guest
// memory the payload declared per vCPU (layout hints), the share that is on
// the node its vCPUs last ran on - the figure --placement=hard maximises,
// measured with move_pages. Memory declared for several vCPUs (a group)
// counts page by page as the share of those vCPUs on the page's node: the
// locality the group's vCPUs would see if each used all of it alike. (Until
// 2026-12-05 such a page counted whole on any node one of them ran on, so a
// group split over every node read 100% wherever its memory was.)
#ifndef NUMAVM_CLI_PLACEMENT_LOCALITY_H_
#define NUMAVM_CLI_PLACEMENT_LOCALITY_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "vmm/guest_memory.h"
#include "vmm/guest_observer.h"

namespace numavm {

// `vcpu_node_ids[v]`: host node id vCPU v last ran on, -1 unknown. Empty
// when nothing is known (no layout, no vCPU node, nothing resident).
std::optional<double> LayoutPlacementLocality(const std::vector<LayoutHint>& layouts,
                                              const GuestMemory& memory,
                                              const std::vector<int>& vcpu_node_ids);

// The same, with the declared memory's bytes per host node id (resident
// pages only).
struct LayoutPlacement {
  std::optional<double> locality;
  std::map<int, uint64_t> bytes_per_node;
};
LayoutPlacement MeasureLayoutPlacement(const std::vector<LayoutHint>& layouts,
                                       const GuestMemory& memory,
                                       const std::vector<int>& vcpu_node_ids);

}  // namespace numavm

#endif  // NUMAVM_CLI_PLACEMENT_LOCALITY_H_
