// The balancer of one VM: sample -> stats -> policy -> act. Fed a batch of
// samples per scan period (on the sampling thread); asks a PlacementView
// where pages and vCPUs are and to move pages. Counters feed the reports.
#ifndef NUMAVM_BALANCER_VM_BALANCER_H_
#define NUMAVM_BALANCER_VM_BALANCER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "balancer/placement_view.h"
#include "balancer/policy/page_policy.h"
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
  std::map<std::string, uint64_t> decisions;  // reason -> count
  double locality() const {
    return attributed == 0 ? 0.0 : static_cast<double>(local) / attributed;
  }
};

class VmBalancer final {
 public:
  using Advice = std::function<void(uint64_t gfn, int from, int to, PageReason reason)>;

  VmBalancer(BalanceMode mode, const Topology& topology, int vcpus, uint64_t guest_pages,
             PlacementView& view, PagePolicyConfig config = {}, Advice advice = nullptr)
      : mode_(mode), topology_(topology), view_(view), config_(config),
        advice_(std::move(advice)), pages_(guest_pages),
        faults_(vcpus, topology.node_count()), home_(vcpus, -1) {}

  // One period's samples. An error disables balancing for this VM (the
  // caller reports it); the VM runs on.
  absl::Status OnBatch(const AccessBatch& batch, absl::Duration now);

  BalancerCounters counters() const;

 private:
  // Gives each vCPU the node where its memory is (distance-weighted, with
  // hysteresis, within the node's CPUs); returns each vCPU's effective node.
  std::vector<int> PlaceVcpus(const std::vector<int>& running, BalancerCounters& delta);

  const BalanceMode mode_;
  const Topology& topology_;
  PlacementView& view_;
  const PagePolicyConfig config_;
  const Advice advice_;
  // Only the sampling thread touches these.
  PageStateTable pages_;
  VcpuFaults faults_;
  std::vector<int> home_;  // node index each vCPU is pinned to, -1: none

  mutable absl::Mutex mu_;
  BalancerCounters counters_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_VM_BALANCER_H_
