// Where vCPUs should run: pure functions of the topology and decayed fault
// counts.
//  - PreferredNode: the node whose neighbourhood holds most of a vCPU's (or
//    group's) memory, scoring every node by the faults on each node weighted
//    by 10 / distance, with hysteresis so that near-ties do not flip.
//  - PlaceGroups: vCPUs that share memory are placed together; a group too
//    big for one node gets the set of nodes nearest each other (on 4 nodes
//    in two pairs: A-A-B-B, never A-B-A-B), within each node's free CPUs.
#ifndef NUMAVM_BALANCER_POLICY_VCPU_PLACEMENT_H_
#define NUMAVM_BALANCER_POLICY_VCPU_PLACEMENT_H_

#include <vector>

#include "balancer/topology/topology.h"

namespace numavm {

// Distance-weighted score of running on node index `n` given
// `faults_per_node` (by node index).
double NodeScore(const Topology& topology, const std::vector<double>& faults_per_node, int n);

// The preferred node index; `current` (-1: none) is kept unless another
// node scores more than (1 + hysteresis) times as high.
int PreferredNode(const Topology& topology, const std::vector<double>& faults_per_node, int current,
                  double hysteresis = 0.1);

struct GroupDemand {
  int vcpus = 0;
  std::vector<double> faults_per_node;  // where the group's memory is
};

// Node indices for each group, largest group first choosing; a node's free
// CPUs (`free_cpus[n]`, by node index) are never oversubscribed. A group
// that cannot fit gets an empty set.
std::vector<std::vector<int>> PlaceGroups(const Topology& topology,
                                          const std::vector<GroupDemand>& groups,
                                          std::vector<int> free_cpus);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_VCPU_PLACEMENT_H_
