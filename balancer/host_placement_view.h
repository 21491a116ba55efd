// The PlacementView of a VM running in this process: move_pages queries and
// moves on the guest RAM mapping, vCPU threads' current CPUs from /proc.
#ifndef NUMAVM_BALANCER_HOST_PLACEMENT_VIEW_H_
#define NUMAVM_BALANCER_HOST_PLACEMENT_VIEW_H_

#include <sys/types.h>

#include <functional>
#include <vector>

#include "balancer/actuation/node_load.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/protected_moves.h"
#include "balancer/actuation/spare_cpus.h"
#include "balancer/actuation/unmapped_moves.h"
#include "balancer/placement_view.h"
#include "balancer/sampling/guest_ram.h"
#include "balancer/topology/topology.h"

namespace numavm {

class HostPlacementView final : public PlacementView {
 public:
  using VcpuThreads = std::function<std::vector<pid_t>()>;
  // Takes a move of guest page `gfn` to host node `node` for a page held
  // away from the guest (AccessSampler::MoveHeld); false: not held.
  using HeldPages = std::function<bool(uint64_t gfn, int node)>;

  HostPlacementView(const Topology& topology, std::vector<GuestRamRegion> ram, VcpuThreads threads,
                    RateLimiter* limiter);
  // Its migrator asks this view's SpareCpus: it stays where it was made.
  HostPlacementView(const HostPlacementView&) = delete;
  HostPlacementView& operator=(const HostPlacementView&) = delete;

  absl::StatusOr<std::vector<int>> PageNodes(const std::vector<uint64_t>& gfns) override;
  std::vector<int> VcpuNodes() override;
  // Other work on each node (NodeLoad), read at most every
  // kNodeLoadInterval.
  std::vector<double> OtherBusyCpus() override;
  static constexpr absl::Duration kNodeLoadInterval = absl::Seconds(5);
  absl::Status PinVcpu(int vcpu, int node) override;
  absl::StatusOr<MigrationOutcome> MovePages(const std::vector<std::pair<uint64_t, int>>& moves,
                                             absl::Duration now) override;

  // Guest memory in a shared file moves with the guest's mappings dropped
  // first, a run at a time, through `alias` (actuation/unmapped_moves.h;
  // not owned, outlives the view); `remap` maps a run back after its move
  // (the sampler's Remap). Without it, or for anonymous memory (an error),
  // pages move where they are mapped.
  absl::Status MoveUnmapped(AliasProcess* alias, UnmappedMoves::Remap remap);
  // Pages move with their runs out of every TLB first, where they are
  // (actuation/protected_moves.h); `fence` (not owned) is the VM's. An
  // error where the kernel cannot (pages then move where they are mapped).
  // `kept`: guest-physical ranges never taken away (their pages move
  // mapped; ProtectedMoves::set_kept).
  absl::Status MoveProtected(MoveFence* fence, const std::vector<GfnRange>& kept = {});
  bool moves_protected() const { return protected_ != nullptr; }
  // Batches moved so (with the fence up).
  uint64_t protected_windows() const { return protected_ ? protected_->windows() : 0; }

  // Whether pages move unmapped (MoveUnmapped found shared files and its
  // alias process started).
  bool moves_unmapped() const { return unmapped_ != nullptr; }
  // ... and its alias process still served at the end.
  bool alias_alive() const { return unmapped_ != nullptr && unmapped_->alias_alive(); }

  // Up to `threads` threads share a period's page moves where one is short
  // of time (PageMigrator::set_workers), as many as the host has idle CPUs
  // for (SpareCpus); protected and unmapped moves use one.
  void set_migrate_threads(int threads) { migrator_.set_workers(threads); }

  // Pages an access sampler holds away from the guest (the evict probes)
  // are not where move_pages finds them: a move of one is the sampler's,
  // which brings the page back on the node asked for. They count as moved.
  void set_held_pages(HeldPages held) { held_ = std::move(held); }
  // Moves so taken.
  uint64_t held_moves() const { return held_moves_; }

  // Where the page moves' wall time went (call when no move is running).
  const MoveTimes& move_times() const { return migrator_.times(); }

 private:
  uintptr_t HostAddress(uint64_t gfn) const;  // 0 if outside RAM

  const Topology& topology_;
  const std::vector<GuestRamRegion> ram_;
  const VcpuThreads threads_;
  HeldPages held_;
  uint64_t held_moves_ = 0;
  std::vector<int> node_index_of_cpu_;
  std::unique_ptr<UnmappedMoves> unmapped_;
  std::unique_ptr<ProtectedMoves> protected_;
  SpareCpus spare_cpus_;
  NodeLoad node_load_;
  PageMigrator migrator_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_HOST_PLACEMENT_VIEW_H_
