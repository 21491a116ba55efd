// Home nodes for a whole VM (or one guest cell), as ESXi's NUMA scheduler
// gives each VM a home: a pure function of the topology, where the VM's
// memory is, how many vCPUs it has, and how busy each node already is with
// other VMs' vCPUs.
//
// The VM gets the fewest nodes that hold its vCPUs (one when it fits), near
// each other, preferring where its memory already is (fewer pages to move);
// its current home is kept unless another scores clearly better
// (hysteresis), so that homes do not flap with small changes in load.
#ifndef NUMAVM_BALANCER_POLICY_HOME_NODE_H_
#define NUMAVM_BALANCER_POLICY_HOME_NODE_H_

#include <string>
#include <vector>

#include "balancer/topology/topology.h"

namespace numavm {

struct HomeRequest {
  int vcpus = 0;
  std::vector<double> pages_per_node;  // by node index: where the memory is
  std::vector<int> current;            // current home (node indices), may be empty
  // Nodes the home may use (by node index; empty: all) - an administrator's
  // constraints (policy/admin_placement.h).
  std::vector<bool> allowed;
};

struct HomeDecision {
  std::vector<int> nodes;  // node indices; empty if the VM fits nowhere
  // "kept", "initial", "better", "current-overloaded", "not-allowed" (the
  // current home uses a node no longer allowed), "does-not-fit", or
  // "allowed-nodes" (the vCPUs fit in no subset of the allowed nodes: all
  // of them, shared)
  std::string reason;
  bool changed = false;
};

// `busy_cpus[n]`: vCPUs of other VMs homed on node index n.
HomeDecision ChooseHome(const Topology& topology, const HomeRequest& request,
                        const std::vector<int>& busy_cpus, double hysteresis = 0.25);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_HOME_NODE_H_
