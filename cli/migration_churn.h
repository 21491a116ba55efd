// --migrate-churn: an integrity exercise, not a policy. Every scan period
// all resident guest pages are moved to the next node (round robin over the
// nodes with memory), as fast as --migrate-rate allows, while the guest
// runs - `verify` then checks that no byte changed under it.
#ifndef NUMAVM_CLI_MIGRATION_CHURN_H_
#define NUMAVM_CLI_MIGRATION_CHURN_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/protected_moves.h"
#include "balancer/actuation/unmapped_moves.h"
#include "balancer/topology/topology.h"
#include "vmm/guest_memory.h"

namespace numavm {

class MigrationChurn {
 public:
  MigrationChurn(const Topology& topology, const GuestMemory& memory, RateLimiter* limiter,
                 uint64_t page_bytes);
  // Moves every present page that is not on the next node there.
  void Step(absl::Duration now);
  uint64_t moved() const { return moved_; }
  uint64_t failed() const { return failed_; }
  bool possible() const { return nodes_.size() >= 2; }
  // Moves pages with the guest's mappings dropped first, a run at a time
  // (balancer/actuation/unmapped_moves.h), where `ram` is in a shared file.
  // Nothing is mapped back: the guest faults each page back itself (through
  // the hinting-fault sampler when it runs), which exercises that path too.
  void MoveUnmapped(const std::vector<GuestRamRegion>& ram, AliasProcess* alias);
  uint64_t moved_unmapped() const { return moved_unmapped_; }
  // Moves pages with each run protected first, where they are
  // (balancer/actuation/protected_moves.h): every window stalls the vCPUs
  // that touch it, which `verify` exercises. Pages in `kept` (a payload's
  // runtime, which the balancer would move mapped) do not churn at all:
  // this exercise is of protected moves, mapped ones have plain
  // --migrate-churn - and in the NUMA lab a running nested guest whose page
  // tables and code churned mapped between the windows triple-faulted in
  // every attempt (docs/numa-lab.md). False where the kernel cannot.
  bool MoveProtected(const std::vector<GuestRamRegion>& ram, MoveFence* fence,
                     std::vector<ProtectedMoves::Range> kept);
  uint64_t protected_windows() const { return protected_ ? protected_->windows() : 0; }
  const MoveTimes& move_times() const { return migrator_.times(); }

 private:
  std::vector<int> nodes_;    // node ids with memory
  std::vector<void*> pages_;  // host address of every guest page that churns
  std::unique_ptr<UnmappedMoves> unmapped_;
  std::unique_ptr<ProtectedMoves> protected_;
  PageMigrator migrator_;
  uint64_t step_ = 0;
  uint64_t moved_ = 0, failed_ = 0, moved_unmapped_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_CLI_MIGRATION_CHURN_H_
