// vCPU placement for one VM: where each vCPU's memory is (decayed fault
// counts), which vCPUs share memory (groups, from page hand-overs), and the
// homes that follow from both - groups together on one node or the nearest
// nodes, private vCPUs spread and pinned near their memory. The plan is
// pure (policy/vcpu_plan.h); this class keeps the evidence and applies the
// plan (pins).
// Only the sampling thread calls it.
#ifndef NUMAVM_BALANCER_VCPU_PLACER_H_
#define NUMAVM_BALANCER_VCPU_PLACER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/time/time.h"
#include "balancer/balancer_counters.h"
#include "balancer/placement_view.h"
#include "balancer/policy/vcpu_groups.h"
#include "balancer/stats/vcpu_faults.h"
#include "balancer/topology/topology.h"

namespace numavm {

struct VcpuPlacerConfig {
  std::vector<std::vector<int>> cells;  // vCPU lists that belong together from the start
  GroupingConfig grouping;
  absl::Duration fault_half_life = absl::Seconds(2);
  // Off: vCPUs are placed by someone else (a libvirt domain's homes, chosen
  // across domains: policy/home_node.h); this class only keeps the evidence
  // and the groups, and never pins.
  bool place_vcpus = true;
  uint64_t guest_bytes = 0;  // the VM's memory (policy/vcpu_plan.h: whether it fits a node)
};

class VcpuPlacer final {
 public:
  VcpuPlacer(BalanceMode mode, const Topology& topology, int vcpus, PlacementView& view,
             VcpuPlacerConfig config);

  int vcpus() const { return faults_.vcpus(); }

  // Evidence from the page loop (vCPU indices are the caller's to check).
  void AddFault(int vcpu, int node) { faults_.Add(vcpu, node); }
  void AddSample(int vcpu) { samples_[vcpu] += 1; }
  void AddSharing(int a, int b, uint64_t times = 1) {
    shared_[a][b] += static_cast<double>(times);
    shared_[b][a] += static_cast<double>(times);
  }

  // The group id of `vcpu` (its group's smallest vCPU) and whether it shares
  // memory with others, as of the last Place().
  int group_of(int vcpu) const { return group_[vcpu]; }
  bool grouped(int vcpu) const { return group_size_[group_[vcpu]] > 1; }
  // Whether the last Place() put together vCPUs that were apart.
  bool joined() const { return joined_; }
  // The node index `vcpu` is pinned to (-1: none yet, or not placed here).
  int home(int vcpu) const { return home_[vcpu]; }

  // Regroups, then (unless `hold`: warming up) gives vCPUs homes, and decays
  // the evidence: half of it every fault_half_life, or every `sweep` (the
  // time the scan takes to cover the guest) if longer - evidence must last
  // a sweep, or it says only what the scan saw last. `running`: the node
  // each vCPU ran on (-1: unknown). Returns each vCPU's node from now on.
  std::vector<int> Place(const std::vector<int>& running, absl::Duration now, bool hold,
                         BalancerCounters& delta, absl::Duration sweep = absl::ZeroDuration());

  // Per group id (empty `nodes` for one-vCPU groups): the nodes its vCPUs
  // are on; the one of them with most of its vCPUs (ties: the one holding
  // most of its memory), where its shared pages are pulled to; and the
  // nodes with as many of its vCPUs as that one, which serve it as well.
  struct GroupSpan {
    std::vector<bool> nodes;
    int primary = -1;
    bool multi_node = false;    // more than one of `nodes` is set
    std::vector<bool> busiest;  // nodes with the most of its vCPUs
  };
  std::vector<GroupSpan> GroupSpans(const std::vector<int>& vcpu_nodes) const;

  size_t state_bytes() const;

 private:
  void DecayStats(absl::Duration now, absl::Duration half_life);

  const BalanceMode mode_;
  const Topology& topology_;
  PlacementView& view_;
  const VcpuPlacerConfig config_;
  VcpuFaults faults_;
  std::vector<int> home_;  // node index each vCPU is pinned to, -1: none
  // Grouping evidence: co-access between vCPUs, each vCPU's samples, links.
  std::vector<std::vector<double>> shared_;
  std::vector<double> samples_;
  std::vector<std::vector<bool>> linked_;
  std::vector<int> group_;       // group id per vCPU
  std::vector<int> group_size_;  // by group id
  bool joined_ = false;
  std::optional<absl::Duration> last_decay_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_VCPU_PLACER_H_
