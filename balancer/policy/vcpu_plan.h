// The vCPU placement plan of one period: a pure function from where each
// vCPU's memory is (decayed fault counts by node), its group, its home (the
// node it is pinned to, if any) and where it ran, to the homes it should
// have - each with its reason. Applying the plan (pinning) is VcpuPlacer's.
//  - Groups (vCPUs that share memory) go together, largest first, on one
//    node if they fit, else the nearest nodes (policy/vcpu_placement.h);
//    a group is kept where it is while that scores within `group_keep` of
//    the best placement (it is given homes there: vCPUs left to the host
//    scheduler wander, and their memory would follow them).
//  - Private vCPUs go to their preferred node (where their memory is,
//    distance-weighted, with `node_preference` of hysteresis) if it has
//    room, else stay where they run if that has room, else the best node
//    with room.
//  - Room: a node takes at most its CPUs. A VM that fits one node (its
//    vCPUs in the CPUs other work leaves free there, its memory in the
//    node's memory) may gather on such a node, as ESXi homes a VM that fits
//    a node and the kernel keeps a few tasks with their memory: private
//    vCPUs whose memory is on one node go to it, and none of it moves.
//    Otherwise each node takes at most a fair share of the VM's vCPUs (more
//    only for a group that needs it, or as much as other work leaves free
//    on a node that could hold the VM), so that private vCPUs stay spread
//    and their memory comes to them.
#ifndef NUMAVM_BALANCER_POLICY_VCPU_PLAN_H_
#define NUMAVM_BALANCER_POLICY_VCPU_PLAN_H_

#include <cstdint>
#include <vector>

#include "balancer/balancer_counters.h"
#include "balancer/topology/topology.h"

namespace numavm {

// The hysteresis of each decision, by name.
struct VcpuHysteresis {
  double node_preference = 0.1;  // another node must score 10% more to be preferred
  double group_keep = 0.1;       // a group stays while within 10% of the best placement
  // A node that holds homes of the VM counts this much less other work
  // (CPUs) when asked whether the VM still fits it, so that a VM does not
  // leave and come back as the host's load wavers around a whole CPU.
  double fit_keep = 0.5;
};

struct VcpuPlanInput {
  const Topology* topology = nullptr;
  const std::vector<std::vector<double>>* faults = nullptr;  // [vcpu][node index]
  std::vector<int> group;    // group id per vCPU (its smallest vCPU)
  std::vector<int> home;     // node index each vCPU is pinned to, -1: none
  std::vector<int> running;  // node index each vCPU ran on, -1: unknown
  uint64_t vm_bytes = 0;     // the guest's memory (0: unknown, fits any node)
  // CPUs' worth of other work on each node lately (by node index; not this
  // VM's vCPUs); empty or short: none.
  std::vector<double> other_busy;
};

// The CPUs of node index `node` that other work leaves free: its CPUs less
// `other_busy` less `keep`, rounded to whole CPUs.
int FreeCpus(const Topology& topology, const std::vector<double>& other_busy, int node,
             double keep = 0.0);

// Whether a VM of `vcpus` vCPUs and `vm_bytes` of memory fits node index
// `node`: in its free CPUs and its memory (a node's memory 0: unknown,
// fits).
bool FitsNode(const Topology& topology, const std::vector<double>& other_busy, int node, int vcpus,
              uint64_t vm_bytes, double keep = 0.0);

enum class VcpuMoveReason : uint8_t {
  kGroupPlaced,  // its group goes to a better placement
  kGroupKept,    // its group stays where it runs, now with homes
  kPreferred,    // private: to the node holding its memory
  kWhereItRuns,  // private: a home where it runs (its preferred node is full)
  kBestRoom,     // private: the best node with room (its own has too many)
};

struct VcpuMove {
  int vcpu = 0;
  int node = 0;
  bool changes_node = false;  // a move, not only a home where it runs
  VcpuMoveReason reason = VcpuMoveReason::kPreferred;
};

struct VcpuPlan {
  std::vector<VcpuMove> moves;  // in the order to apply them
  std::vector<int> nodes;       // each vCPU's node once applied
  DecisionCounts
      decisions;  // vcpu-move, vcpu-home, vcpu-node-full, group-does-not-fit, vm-fits-node
};

VcpuPlan PlanVcpus(const VcpuPlanInput& in, const VcpuHysteresis& hysteresis = {});

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_VCPU_PLAN_H_
