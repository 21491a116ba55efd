// A placement model of a topology (usually from a topology file): pages and
// vCPUs on model nodes, moves that always do what they are told within the
// rate limit and each node's memory. The same balancer code that acts on a
// live VM runs against it in `numavm replay`, `numavm simulate` and the
// policy tests. State per page is 4 bytes (node, last move, node left), so
// a 1 TiB guest fits in 1 GiB.
#ifndef NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_
#define NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "balancer/actuation/rate_limiter.h"
#include "balancer/placement_view.h"
#include "balancer/sampling/scan_window.h"
#include "balancer/topology/topology.h"

namespace numavm {

class ModelPlacementView final : public PlacementView {
 public:
  static constexpr uint64_t kPageBytes = 4096;
  // A move of a page that moved this recently before is a re-migration
  // (to the second: last moves are kept in whole seconds).
  static constexpr absl::Duration kRemigrationWindow = absl::Seconds(10);
  // Pages per chunk of the per-node counts (2 MiB).
  static constexpr uint64_t kChunkPages = 512;

  // Pages start not resident; vCPUs on `vcpu_nodes` (node indices).
  // `limiter` may be null (no limit) and must outlive the view.
  ModelPlacementView(const Topology& topology, uint64_t pages, std::vector<int> vcpu_nodes,
                     RateLimiter* limiter);

  // First touch: makes `gfn` resident on `node` (no-op if it is resident;
  // when the node is full, the nearest node with room, as the kernel does).
  void Touch(uint64_t gfn, int node);
  void TouchRange(GfnRange range, int node);
  int NodeOf(uint64_t gfn) const { return page_node_[gfn]; }

  // Keeps pages per node per 2 MiB chunk from now on, for NodeCounts.
  void EnableNodeCounts();
  // Resident pages of `range` on each node (NodeCounts enabled).
  std::vector<uint64_t> NodeCounts(GfnRange range) const;
  // Called after every move, with the page and its old and new node.
  using MoveListener = std::function<void(uint64_t gfn, int from, int to)>;
  void set_move_listener(MoveListener listener) { listener_ = std::move(listener); }

  // Holds every vCPU and every page move on `node` (index), as a cpuset of
  // that node's CPUs and memory would: vCPUs run there, a pin to another
  // node fails, and so does a page move to one. -1 lets them go: each vCPU
  // is then where it was last pinned, or where it started.
  void Confine(int node) { confined_ = node; }
  bool confined() const { return confined_ >= 0; }

  absl::StatusOr<std::vector<int>> PageNodes(const std::vector<uint64_t>& gfns) override;
  std::vector<int> VcpuNodes() override {
    return confined_ >= 0 ? std::vector<int>(vcpu_node_.size(), confined_) : vcpu_node_;
  }
  // Other work on the modelled host: CPUs' worth per node index, steady.
  void set_other_busy(std::vector<double> busy) { other_busy_ = std::move(busy); }
  std::vector<double> OtherBusyCpus() override { return other_busy_; }
  absl::Status PinVcpu(int vcpu, int node) override;
  absl::StatusOr<MigrationOutcome> MovePages(const std::vector<std::pair<uint64_t, int>>& moves,
                                             absl::Duration now) override;

  // Each page move takes `per_page` of the balancer's time, and one
  // period's moves (the calls with one `now`) stop after `per_period`, as
  // PageMigrator bounds them in `run`: the rest is deferred. Zero (the
  // default): moves take no time. As PageMigrator with up to `workers`
  // threads, a call's batches are shared when one thread would not finish
  // them in the period's time left (WorkersFor; the model knows a batch's
  // cost from the start, where PageMigrator measures it first).
  void set_move_time(absl::Duration per_page, absl::Duration per_period, int workers = 1) {
    move_time_ = per_page;
    move_time_per_period_ = per_period;
    move_workers_ = std::max(1, workers);
  }

  // The time the moves of the period `now` took (set_move_time).
  absl::Duration move_time_of(absl::Duration now) const {
    return now == period_ ? spent_ : absl::ZeroDuration();
  }

  uint64_t page_moves() const { return page_moves_; }
  uint64_t vcpu_pins() const { return vcpu_pins_; }
  // Moves of a page that had already moved within kRemigrationWindow before.
  uint64_t remigrations() const { return remigrations_; }
  // ... back to the node it left then: ping-pong.
  uint64_t bounces() const { return bounces_; }
  std::vector<uint64_t> pages_per_node() const { return used_; }

 private:
  void Count(uint64_t gfn, int node, int delta);

  const Topology& topology_;
  std::vector<int8_t> page_node_;    // -1: not resident
  std::vector<uint16_t> last_move_;  // second of the last move + 1; 0: never moved
  std::vector<int8_t> left_node_;    // the node the last move left
  std::vector<uint64_t> capacity_;   // pages per node
  std::vector<uint64_t> used_;
  std::vector<uint16_t> chunk_counts_;  // [chunk * nodes + node], when enabled
  std::vector<int> vcpu_node_;
  int confined_ = -1;
  std::vector<double> other_busy_;
  RateLimiter* const limiter_;
  MoveListener listener_;
  absl::Duration move_time_, move_time_per_period_;
  int move_workers_ = 1;
  absl::Duration period_ = -absl::InfiniteDuration(), spent_;
  uint64_t page_moves_ = 0;
  uint64_t vcpu_pins_ = 0;
  uint64_t remigrations_ = 0;
  uint64_t bounces_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPLAY_MODEL_PLACEMENT_VIEW_H_
