// Host NUMA topology: nodes, their CPUs and memory, and the distance matrix.
#ifndef NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_H_
#define NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // online CPUs; empty for a memory-only node
  uint64_t memory_bytes = 0;
  uint64_t free_bytes = 0;
};

struct Topology {
  std::vector<NumaNode> nodes;  // ascending id
  // distance[i][j] between nodes[i] and nodes[j] (ACPI SLIT: 10 = local).
  std::vector<std::vector<int>> distance;

  int node_count() const { return static_cast<int>(nodes.size()); }
  // Index into `nodes` of node `id`, or -1.
  int IndexOf(int id) const;
  // Ids of nodes that have CPUs, ascending.
  std::vector<int> CpuNodeIds() const;
  // Node index of each CPU id, up to the largest CPU of any node (-1: in
  // no node).
  std::vector<int> NodeIndexOfCpus() const;
};

// Reads files below a sysfs root; tests substitute a fake tree.
class SysfsReader {
 public:
  virtual ~SysfsReader() = default;
  virtual absl::StatusOr<std::string> Read(absl::string_view relative_path) const = 0;
};

// Reads files under `root` (default: the real /sys/devices/system/node).
class DirectorySysfsReader final : public SysfsReader {
 public:
  explicit DirectorySysfsReader(std::string root = "/sys/devices/system/node")
      : root_(std::move(root)) {}
  absl::StatusOr<std::string> Read(absl::string_view relative_path) const override;

 private:
  std::string root_;
};

// The largest CPU (or node) id a list may name: Linux's NR_CPUS limit.
inline constexpr int kMaxCpuId = 8191;

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}. An id past `max_id` or named twice is
// an error (checked before expanding a range, so "0-2147483647" costs nothing).
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text, int max_id = kMaxCpuId);

absl::StatusOr<Topology> ReadTopology(const SysfsReader& reader);
// The host's topology from the real sysfs.
absl::StatusOr<Topology> ReadHostTopology();

}  // namespace numavm

#endif  // NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_H_
