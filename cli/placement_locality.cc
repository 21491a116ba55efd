#include "cli/placement_locality.h"

#include <algorithm>

#include "balancer/actuation/page_nodes.h"

namespace numavm {

std::optional<double> LayoutPlacementLocality(const std::vector<LayoutHint>& layouts,
                                              const GuestMemory& memory,
                                              const std::vector<int>& vcpu_node_ids) {
  return MeasureLayoutPlacement(layouts, memory, vcpu_node_ids).locality;
}

LayoutPlacement MeasureLayoutPlacement(const std::vector<LayoutHint>& layouts,
                                       const GuestMemory& memory,
                                       const std::vector<int>& vcpu_node_ids) {
  constexpr uint64_t kPage = 4096;
  LayoutPlacement out;
  uint64_t resident = 0;
  double local = 0;
  for (const LayoutHint& hint : layouts) {
    std::vector<int> nodes;
    for (int v = 0; v < 64 && v < static_cast<int>(vcpu_node_ids.size()); ++v) {
      if ((hint.vcpu_mask >> v & 1) && vcpu_node_ids[v] >= 0) nodes.push_back(vcpu_node_ids[v]);
    }
    if (nodes.empty()) continue;
    const uint64_t first = (hint.start.value + kPage - 1) / kPage * kPage;
    const uint64_t last = (hint.start.value + hint.bytes) / kPage * kPage;
    if (last <= first) continue;
    uint8_t* host = memory.HostPointer(GuestAddress{first}, last - first);
    if (host == nullptr) continue;
    std::vector<void*> pages;
    for (uint64_t off = 0; off < last - first; off += kPage) pages.push_back(host + off);
    absl::StatusOr<std::vector<int>> where = QueryNodesOf(0, pages);
    if (!where.ok()) return out;
    for (int n : *where) {
      if (n < 0) continue;
      ++resident;
      out.bytes_per_node[n] += kPage;
      // A page shared by a group counts by the share of the group's vCPUs
      // on its node: a group split over two nodes, its memory half on each,
      // is half placed, not whole (each of its vCPUs finds half of what it
      // uses local).
      local += static_cast<double>(std::count(nodes.begin(), nodes.end(), n)) /
               static_cast<double>(nodes.size());
    }
  }
  if (resident > 0) out.locality = local / static_cast<double>(resident);
  return out;
}

}  // namespace numavm
