// The balancer of one VM: sample -> stats -> policy -> act. Fed a batch of
// samples per scan period (on the sampling thread); asks a PlacementView
// where pages and vCPUs are and to move pages. Counters feed the reports.
#ifndef NUMAVM_BALANCER_VM_BALANCER_H_
#define NUMAVM_BALANCER_VM_BALANCER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "balancer/placement_view.h"
#include "balancer/policy/page_policy.h"
#include "balancer/policy/vcpu_groups.h"
#include "balancer/sampling/access_sample.h"
#include "balancer/stats/page_state.h"
#include "balancer/stats/vcpu_faults.h"
#include "balancer/topology/topology.h"

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

struct BalancerConfig {
  PagePolicyConfig page;
  // vCPU lists that belong together from the start (guest cells).
  std::vector<std::vector<int>> cells;
  GroupingConfig grouping;
  // How fast where-the-memory-is forgets, for vCPU placement and grouping:
  // in time, not periods, so that a short scan period does not make vCPUs
  // chase the part of their memory the guest touched last.
  absl::Duration fault_half_life = absl::Seconds(2);
  // No page moves for this long after the first batch: vCPU groups need a
  // few periods of evidence, and pages moved before them would move again.
  absl::Duration warmup = absl::Seconds(4);
};

class VmBalancer final {
 public:
  using Advice = std::function<void(uint64_t gfn, int from, int to, PageReason reason)>;

  VmBalancer(BalanceMode mode, const Topology& topology, int vcpus, uint64_t guest_pages,
             PlacementView& view, BalancerConfig config = {}, Advice advice = nullptr)
      : mode_(mode), topology_(topology), view_(view), config_(std::move(config)),
        advice_(std::move(advice)), pages_(guest_pages),
        faults_(vcpus, topology.node_count()), home_(vcpus, -1),
        shared_(vcpus, std::vector<double>(vcpus, 0.0)), group_samples_(vcpus, 0.0),
        linked_(vcpus, std::vector<bool>(vcpus, false)), group_(vcpus), group_size_(vcpus, 1) {
    for (int v = 0; v < vcpus; ++v) group_[v] = v;
  }

  // One period's samples. An error disables balancing for this VM (the
  // caller reports it); the VM runs on.
  absl::Status OnBatch(const AccessBatch& batch, absl::Duration now);

  BalancerCounters counters() const;

 private:
  absl::Status Balance(const AccessBatch& batch, absl::Duration now, BalancerCounters& delta);
  // Fault counts and who-followed-whom on pages; returns each sample's
  // previous vCPU on its page (-1: none).
  std::vector<int> RecordSharing(const AccessBatch& batch, const std::vector<int>& page_nodes);
  // Gives each vCPU the node where its memory is (distance-weighted, with
  // hysteresis, within the node's CPUs): vCPUs that share memory together,
  // the others spread; returns each vCPU's effective node.
  std::vector<int> PlaceVcpus(const std::vector<int>& running, absl::Duration now,
                              bool warming_up, BalancerCounters& delta);
  // Halves the fault and grouping statistics per fault_half_life.
  void DecayStats(absl::Duration now);
  // Pins `v` to `node`; false if the move is only advised or failed.
  bool MoveVcpu(int v, int node, std::vector<int>& effective, std::vector<int>& load,
                BalancerCounters& delta);

  const BalanceMode mode_;
  const Topology& topology_;
  PlacementView& view_;
  const BalancerConfig config_;
  const Advice advice_;
  // Only the sampling thread touches these.
  PageStateTable pages_;
  VcpuFaults faults_;
  std::vector<int> home_;  // node index each vCPU is pinned to, -1: none
  std::optional<absl::Duration> last_batch_;
  std::optional<absl::Duration> first_batch_;
  absl::Duration epoch_start_;  // of the re-migration epochs
  // Grouping evidence, decayed more slowly than the fault counts (it is
  // sparser): co-access between vCPUs, each vCPU's samples, current links.
  std::vector<std::vector<double>> shared_;
  std::vector<double> group_samples_;
  std::vector<std::vector<bool>> linked_;
  std::vector<int> group_;                   // group id per vCPU (its smallest vCPU)
  std::vector<int> group_size_;              // by group id
  struct PeriodLocality {
    absl::Duration at;
    uint64_t attributed = 0, local = 0;
  };
  std::deque<PeriodLocality> window_;

  mutable absl::Mutex mu_;
  BalancerCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_VM_BALANCER_H_
