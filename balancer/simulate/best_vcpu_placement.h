// The best locality a simulated guest could have if its vCPUs may move:
// each page on the node whose vCPUs use it most (as GroundTruth's `best`),
// the vCPUs placed to make that as large as the nodes' CPUs allow. A node
// takes at most as many vCPUs as it has CPUs (its share of them when the
// vCPUs outnumber the host's CPUs, and never fewer than started there).
//
// GroundTruth's `best` keeps every vCPU where it started. For memory that
// a group of vCPUs shares, started one a node, that bar is low: numa01's
// two groups of two on two nodes of two CPUs, started [0,1,0,1], have a
// best of 50% there and 100% with the groups on a node each. A balancer
// that gathers a group "beats best"; how far it stays from this bar is
// what it left on the table.
//
// Found by local search from where the vCPUs started - the move of one
// vCPU to a node with room, or the swap of two, that raises locality most,
// until none does - so it is a placement the balancer could reach one step
// at a time, and never below `best`. It is not proven optimal. Memory
// capacity is ignored, as for `best`.
#ifndef NUMAVM_BALANCER_SIMULATE_BEST_VCPU_PLACEMENT_H_
#define NUMAVM_BALANCER_SIMULATE_BEST_VCPU_PLACEMENT_H_

#include <vector>

#include "balancer/simulate/workload_model.h"
#include "balancer/topology/topology.h"

namespace numavm {

struct VcpuPlacementBest {
  double locality = 0;          // access-weighted share local; 0 without accesses
  std::vector<int> vcpu_nodes;  // node index per vCPU
};

// `start_nodes`: the node index each vCPU started on (its size is the
// number of vCPUs).
VcpuPlacementBest BestVcpuPlacement(const Topology& topology, const WorkloadPhase& phase,
                                    const std::vector<int>& start_nodes);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_BEST_VCPU_PLACEMENT_H_
