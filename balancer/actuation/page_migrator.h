// Moves guest pages between host nodes with move_pages(2): batched, rate
// limited, and judged by re-querying placement afterwards, because
// move_pages' status array can report -EBUSY for pages that did move.
// Optionally bounded in time too: once a period's migrations (the calls
// with one `now`) have taken `max_time` of wall time, no new batch starts
// and the rest is deferred - a host that migrates slowly, or a large
// backlog, never holds the caller's loop for long. Where one thread cannot
// move what the rate limit grants within that time (batches measured to
// cost more than the time left), a call's batches are shared by up to
// `workers` threads (set_workers), as the kernel's own balancing migrates
// from every faulting vCPU at once.
// The mechanism never knows why a page moves; outcomes go back to the policy.
#ifndef NUMAVM_BALANCER_ACTUATION_PAGE_MIGRATOR_H_
#define NUMAVM_BALANCER_ACTUATION_PAGE_MIGRATOR_H_

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/actuation/rate_limiter.h"

namespace numavm {

struct PageMove {
  uintptr_t address = 0;  // host address in process `pid`
  int to_node = 0;        // host node id
};

// How a batch's pages are handed to move_pages(2). Moving a page that KVM
// maps costs an MMU-notifier invalidation, hence a TLB flush of every vCPU,
// per page; a staging may drop the guest's mappings of a batch's
// contiguous runs first (one invalidation per run) and name the pages
// through a mapping KVM does not know (actuation/unmapped_moves.h), or
// take the runs out of every TLB where they are (actuation/protected_moves.h).
struct StagedPages {
  pid_t pid = 0;          // whose mappings `at` are in
  std::vector<void*> at;  // one per page; empty: the pages as they are
  // The pages as they are, made ready where they are (protected_moves.h):
  // Unstage follows the move.
  bool in_place = false;
};
class MoveStaging {
 public:
  virtual ~MoveStaging() = default;
  // Before a batch moves: where move_pages is to find the pages of `pages`
  // (addresses in this process).
  virtual StagedPages Stage(const std::vector<void*>& pages) = 0;
  // After it moved (and its placement was read back through Stage's
  // addresses): the guest's mappings as they were.
  virtual void Unstage() = 0;
};

// Where a migrator's wall time went, over all its batches: dropping the
// guest's mappings and mapping the pages where move_pages finds them
// (stage), move_pages itself (move), reading placement back (query), and
// mapping the guest's runs back (unstage).
// The times are summed over threads; `helper_cpu` is the CPU time of the
// threads a call started beside its caller (set_workers), which the
// caller's own CPU time does not show.
struct MoveTimes {
  uint64_t batches = 0;
  uint64_t pages = 0;  // asked to move in them
  absl::Duration stage, move, query, unstage;
  uint64_t parallel_calls = 0;  // calls whose batches more than one thread shared
  int most_workers = 1;         // the most threads one call used
  absl::Duration helper_cpu;
  MoveTimes& operator+=(const MoveTimes& o) {
    batches += o.batches;
    pages += o.pages;
    stage += o.stage;
    move += o.move;
    query += o.query;
    unstage += o.unstage;
    parallel_calls += o.parallel_calls;
    most_workers = std::max(most_workers, o.most_workers);
    helper_cpu += o.helper_cpu;
    return *this;
  }
};

// How many threads share a call's `batches`: one, unless one thread would
// take longer than `target` at `batch_cost` a batch (zero: not measured
// yet); then as many as would finish in `target` (all when it is not
// positive), up to `max_workers` and one per batch.
int WorkersFor(size_t batches, absl::Duration batch_cost, absl::Duration target, int max_workers);

struct MigrationOutcome {
  uint64_t moved = 0;      // now on the requested node
  uint64_t busy = 0;       // not moved, transient (EBUSY, EAGAIN): retry later
  uint64_t no_memory = 0;  // the destination node is full (ENOMEM)
  uint64_t failed = 0;     // not moved for another reason
  uint64_t deferred = 0;   // not attempted: over the rate limit
  uint64_t bytes_moved = 0;
  uint64_t moved_unmapped = 0;  // of `moved`: with the guest's mapping dropped first
  std::vector<PageMove> retry;  // busy and deferred moves

  // Adds `o`'s counts (not its retry list).
  MigrationOutcome& operator+=(const MigrationOutcome& o) {
    moved += o.moved;
    busy += o.busy;
    no_memory += o.no_memory;
    failed += o.failed;
    deferred += o.deferred;
    bytes_moved += o.bytes_moved;
    moved_unmapped += o.moved_unmapped;
    return *this;
  }
};

class PageMigrator {
 public:
  // `pid` 0 is this process. `limiter` may be shared between VMs (host
  // limit) and must outlive the migrator.
  PageMigrator(pid_t pid, uint64_t page_bytes, RateLimiter* limiter)
      : pid_(pid), page_bytes_(page_bytes), limiter_(limiter) {}

  static constexpr size_t kBatchPages = 512;
  // Wall time one balancing period's migrations may take in `run` (a batch
  // under way ends); the rest waits for the next period, which begins when
  // they end - so moving takes at most about half of the balancing thread.
  // It keeps a period from lasting minutes where migration is slow (the
  // NUMA lab: ~1.4 ms a page through the alias process, ~8 ms mapped) while
  // samples, faults and the stall budget wait. Where a page costs what it
  // does on hardware (5-20 us) it binds for large guests: simulate says a
  // 16 GiB numa02 converges in 58 s at 10 us a page (41 s with free moves);
  // a bound of 250 ms made it 97 s.
  static constexpr absl::Duration kMaxTimePerPeriod = absl::Seconds(1);
  // A period's moves are shared between threads (set_workers) once one
  // thread would take longer than this: while moves run the scan waits,
  // so a second of moves each period slows the scan down too.
  static constexpr absl::Duration kSoloTime = absl::Milliseconds(250);

  // Wall time a period's migrations may take (default: unbounded); `clock`
  // is monotonic time (default: the host's).
  using Clock = std::function<absl::Duration()>;
  void set_max_time(absl::Duration max_time, Clock clock = nullptr);
  // Batches go through `staging` (not owned; nullptr: none). Only for pid 0.
  // A staging is one batch at a time: with it, one thread moves.
  void set_staging(MoveStaging* staging) { staging_ = staging; }
  // At most `workers` threads share a call's batches (default 1; with a
  // time bound only, since without one a single thread is never short of
  // time).
  static constexpr int kMaxWorkers = 64;
  // What `run`, `attach` and `simulate` allow by default. In simulate four
  // threads move four times as much where a page is dear and take a third
  // off the time to 90% of best at 20 us a page; in the NUMA lab, whose
  // CPUs the vCPUs keep busy, four moved no more than one had and each
  // page cost 1.6-2x the CPU (docs/numa-lab.md, "Page moves shared by
  // threads"): extra threads help only on CPUs nobody else wants, so
  // `run` and `attach` gate them by the host's idle CPUs (set_spare_cpus).
  static constexpr int kDefaultWorkers = 4;
  void set_workers(int workers) { max_workers_ = std::clamp(workers, 1, kMaxWorkers); }
  int workers() const { return max_workers_; }
  // With it, extra threads run only on CPUs that were idle: once a period
  // (its first call), `spare()` says how many of the host's CPUs were idle
  // since it was last asked (-1: unknown; actuation/spare_cpus.h) and the
  // helpers' own CPU over that time is added back; a call then uses at
  // most 1 + that many threads, and one while it is unknown.
  void set_spare_cpus(std::function<double()> spare) { spare_cpus_ = std::move(spare); }

  // Moves as many of `moves` as the rate limit allows, in batches.
  absl::StatusOr<MigrationOutcome> Migrate(const std::vector<PageMove>& moves, absl::Duration now);

  const MoveTimes& times() const { return times_; }

 private:
  absl::Status MigrateBatch(const std::vector<PageMove>& batch, MigrationOutcome& out,
                            MoveTimes& times);
  // The first `granted_pages` of `moves` by `workers` threads, within the
  // period's time; returns how many were attempted (a prefix).
  absl::StatusOr<size_t> MigrateShared(const std::vector<PageMove>& moves, size_t granted_pages,
                                       int workers, MigrationOutcome& out);
  // A batch of `pages` took `took`: the cost of a full batch, smoothed.
  void Measured(absl::Duration took, size_t pages);

  const pid_t pid_;
  const uint64_t page_bytes_;
  RateLimiter* const limiter_;
  MoveStaging* staging_ = nullptr;
  absl::Duration max_time_ = absl::InfiniteDuration();
  Clock clock_;
  absl::Duration period_ = -absl::InfiniteDuration();  // the `now` of this period's calls
  absl::Duration spent_;                               // wall time they took
  absl::Duration batch_cost_;  // a full batch's wall time, smoothed (zero: not measured)
  int max_workers_ = 1;
  std::function<double()> spare_cpus_;
  double spare_ = -1;                   // this period's (set_spare_cpus)
  absl::Duration helper_cpu_at_spare_;  // times_.helper_cpu when it was asked
  MoveTimes times_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_PAGE_MIGRATOR_H_
