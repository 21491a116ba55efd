// A placement model of a topology (usually from a topology file): pages and
// vCPUs on model nodes, moves that always do what they are told within the
// rate limit and each node's memory. The same balancer code that acts on a
// live VM runs against it in `numavm replay` and in the policy tests.
#ifndef NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_
#define NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_

#include <cstdint>
#include <vector>

#include "balancer/actuation/rate_limiter.h"
#include "balancer/placement_view.h"
#include "balancer/topology/topology.h"

namespace numavm {

class ModelPlacementView final : public PlacementView {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  // Pages start not resident; vCPUs on `vcpu_nodes` (node indices).
  // `limiter` may be null (no limit) and must outlive the view.
  ModelPlacementView(const Topology& topology, uint64_t pages, std::vector<int> vcpu_nodes,
                     RateLimiter* limiter);

  // First touch: makes `gfn` resident on `node` (no-op if it is resident or
  // the node is full - then the nearest node with room, as the kernel does).
  void Touch(uint64_t gfn, int node);
  int NodeOf(uint64_t gfn) const { return page_node_[gfn]; }

  absl::StatusOr<std::vector<int>> PageNodes(const std::vector<uint64_t>& gfns) override;
  std::vector<int> VcpuNodes() override { return vcpu_node_; }
  absl::Status PinVcpu(int vcpu, int node) override;
  absl::StatusOr<MigrationOutcome> MovePages(const std::vector<std::pair<uint64_t, int>>& moves,
                                             absl::Duration now) override;

  uint64_t page_moves() const { return page_moves_; }
  uint64_t vcpu_pins() const { return vcpu_pins_; }
  // Moves of a page that had already moved within `window` before.
  uint64_t remigrations(absl::Duration window) const;
  // Moves of a page back to a node it had left within `window`: ping-pong.
  uint64_t bounces(absl::Duration window) const;
  std::vector<uint64_t> pages_per_node() const;

 private:
  const Topology& topology_;
  std::vector<int8_t> page_node_;  // -1: not resident
  std::vector<uint64_t> capacity_;  // pages per node
  std::vector<uint64_t> used_;
  std::vector<int> vcpu_node_;
  RateLimiter* const limiter_;
  uint64_t page_moves_ = 0;
  uint64_t vcpu_pins_ = 0;
  struct Move {
    uint64_t gfn;
    absl::Duration at;
    int from, to;
  };
  std::vector<Move> history_;  // for re-migration and bounce counts
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_
