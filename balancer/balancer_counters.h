// What one VM's balancer has seen and done: the counters behind every
// report (run, replay, control socket, metrics).
#ifndef NUMAVM_BALANCER_BALANCER_COUNTERS_H_
#define NUMAVM_BALANCER_BALANCER_COUNTERS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/balance_mode.h"
#include "balancer/stats/neighbour_runs.h"

namespace numavm {

// Every decision the balancer counts, by reason (docs/report-format.md
// explains each). Counted by index in the hot loop; named for reports.
enum class Decision : uint8_t {
  // Per page (policy/page_policy.h's PageReason, in its order).
  kMigrate,
  kFirstSample,
  kNodeChanged,
  kShared,
  kLocal,
  kDestinationFull,
  kUnattributed,
  kGroupPull,
  // Per region (policy/region_policy.h).
  kRegionMove,
  kRegionInPlace,
  kRegionDissent,
  kRegionFollow,
  kRegionBracket,
  // Before deciding.
  kWarmingUp,
  kPageNotResident,
  // vCPUs (VcpuPlacer).
  kVcpuMove,
  kVcpuHome,
  kVcpuPinFailed,
  kVcpuNodeFull,
  kGroupDoesNotFit,
  kVmFitsNode,
  kCount
};

inline const char* DecisionName(Decision d) {
  static constexpr const char* kNames[] = {
      "migrate",        "first-sample",     "node-changed",      "shared",
      "local",          "destination-full", "unattributed",      "group-pull",
      "region-move",    "region-in-place",  "region-dissent",    "region-follow",
      "region-bracket", "warming-up",       "page-not-resident", "vcpu-move",
      "vcpu-home",      "vcpu-pin-failed",  "vcpu-node-full",    "group-does-not-fit",
      "vm-fits-node"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Decision::kCount));
  return kNames[static_cast<size_t>(d)];
}

struct DecisionCounts {
  std::array<uint64_t, static_cast<size_t>(Decision::kCount)> n{};
  uint64_t& operator[](Decision d) { return n[static_cast<size_t>(d)]; }
  uint64_t operator[](Decision d) const { return n[static_cast<size_t>(d)]; }
  DecisionCounts& operator+=(const DecisionCounts& o) {
    for (size_t i = 0; i < n.size(); ++i) n[i] += o.n[i];
    return *this;
  }
  // Reason name -> count, for the reports (zero counts left out).
  std::map<std::string, uint64_t> ByName() const {
    std::map<std::string, uint64_t> out;
    for (size_t i = 0; i < n.size(); ++i) {
      if (n[i] > 0) out[DecisionName(static_cast<Decision>(i))] = n[i];
    }
    return out;
  }
};

// After one period: locality over the last kLocalityWindow periods, and
// pages migrated so far.
struct BalanceSeriesPoint {
  double seconds = 0;
  double locality = 0;
  uint64_t pages_migrated = 0;
  int vcpu_groups = 0;  // groups of vCPUs then (each private vCPU is one)
};

struct BalancerCounters {
  uint64_t samples = 0;     // hint faults (or dirty pages) seen
  uint64_t attributed = 0;  // samples with a vCPU and a resident page
  uint64_t local = 0;       // ... whose page was on the vCPU's node
  uint64_t pages_migrated = 0;
  uint64_t bytes_migrated = 0;
  uint64_t pages_migrated_unmapped = 0;  // of them, with the guest's mappings dropped first
  uint64_t migration_failures = 0;       // failed or no memory on the destination
  uint64_t migrations_deferred = 0;      // over the rate limit or busy
  uint64_t vcpu_moves = 0;               // vCPUs given a new home node
  uint64_t remigrations = 0;             // moves of a page that moved 10-20 s before or less
  uint64_t periods = 0;                  // batches seen
  // The last kLocalityWindow periods only: where locality is now.
  uint64_t window_attributed = 0;
  uint64_t window_local = 0;
  absl::Duration cpu_time;       // the balancer's own (stats, policy, actuation)
  absl::Duration move_cpu_time;  // of it, in page migrations (move_pages)
  absl::Duration view_cpu_time;  // of it, in the view's queries and pinning
  uint64_t state_bytes = 0;      // memory of its per-page and per-vCPU state
  int groups = 0;                // vCPU groups now (vCPUs sharing memory)
  std::vector<int> vcpu_nodes;   // node index each vCPU last ran on (-1: never seen)
  // Each vCPU's group then: the group's smallest vCPU (itself if alone).
  std::vector<int> vcpu_group_of;
  // One point per period with attributed samples, at most kSeriesPoints
  // (then every other point is dropped).
  std::vector<BalanceSeriesPoint> locality_series;
  DecisionCounts decisions;
  uint64_t regions_moved = 0;  // regions whose pages were moved as one batch
  // Regions moved on a bracket's word (RegionBalancer) that their own
  // later visit bore out or contradicted; brackets off once misled.
  uint64_t brackets_borne_out = 0;
  uint64_t brackets_contradicted = 0;
  bool brackets_trusted = true;
  // Co-access in address order (stats/neighbour_runs.h).
  NeighbourRunCounts neighbours;
  // Where page moves spent wall time (the caller's migrator: `run` only).
  MoveTimes move_times;
  double locality() const {
    return attributed == 0 ? 0.0 : static_cast<double>(local) / attributed;
  }
  double window_locality() const {
    return window_attributed == 0 ? 0.0 : static_cast<double>(window_local) / window_attributed;
  }
};

inline constexpr size_t kLocalityWindow = 10;  // periods
inline constexpr absl::Duration kLocalityWindowTime = absl::Seconds(10);
inline constexpr size_t kSeriesPoints = 1000;

}  // namespace numavm

#endif  // NUMAVM_BALANCER_BALANCER_COUNTERS_H_
