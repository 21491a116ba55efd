// What one VM's balancer has seen and done: the counters behind every
// report (run, replay, control socket, metrics).
#ifndef NUMAVM_BALANCER_BALANCER_COUNTERS_H_
#define NUMAVM_BALANCER_BALANCER_COUNTERS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"

namespace numavm {

enum class BalanceMode { kOff, kAdvise, kOn };

struct BalancerCounters {
  uint64_t samples = 0;       // hint faults (or dirty pages) seen
  uint64_t attributed = 0;    // samples with a vCPU and a resident page
  uint64_t local = 0;         // ... whose page was on the vCPU's node
  uint64_t pages_migrated = 0;
  uint64_t bytes_migrated = 0;
  uint64_t migration_failures = 0;  // failed or no memory on the destination
  uint64_t migrations_deferred = 0; // over the rate limit or busy
  uint64_t vcpu_moves = 0;          // vCPUs given a new home node
  uint64_t remigrations = 0;        // moves of a page that moved 10-20 s before or less
  uint64_t periods = 0;             // batches seen
  // The last kLocalityWindow periods only: where locality is now.
  uint64_t window_attributed = 0;
  uint64_t window_local = 0;
  absl::Duration cpu_time;          // the balancer's own (stats, policy, actuation)
  uint64_t state_bytes = 0;         // memory of its per-page and per-vCPU state
  int groups = 0;                   // vCPU groups now (vCPUs sharing memory)
  std::vector<int> vcpu_nodes;      // node index each vCPU last ran on (-1: never seen)
  // (seconds, locality over the last kLocalityWindow periods), one point
  // per period with attributed samples, at most kSeriesPoints (then every
  // other point is dropped).
  std::vector<std::pair<double, double>> locality_series;
  std::map<std::string, uint64_t> decisions;  // reason -> count
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
