// Placement locality of a bundled VM at the end of its run: of the guest
// memory the payload declared per vCPU (layout hints), the share that is on
// a node where one of its vCPUs last ran - the figure --placement=hard
// maximises, measured with move_pages.
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
