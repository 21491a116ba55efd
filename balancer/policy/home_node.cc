#include "balancer/policy/home_node.h"

#include <algorithm>

#include "balancer/policy/vcpu_placement.h"

namespace numavm {
namespace {

double SetScore(const Topology& topology, const std::vector<double>& pages,
                const std::vector<int>& nodes) {
  double score = 0;
  for (int n : nodes) score += NodeScore(topology, pages, n);
  return score;
}

}  // namespace

HomeDecision ChooseHome(const Topology& topology, const HomeRequest& request,
                        const std::vector<int>& busy_cpus, double hysteresis) {
  const int nodes = topology.node_count();
  auto allowed = [&](int n) {
    return request.allowed.empty() ||
           (n < static_cast<int>(request.allowed.size()) && request.allowed[n]);
  };
  std::vector<int> free(nodes, 0);
  for (int n = 0; n < nodes; ++n) {
    const int busy = n < static_cast<int>(busy_cpus.size()) ? busy_cpus[n] : 0;
    free[n] = allowed(n) ? std::max(0, static_cast<int>(topology.nodes[n].cpus.size()) - busy) : 0;
  }
  std::vector<double> pages = request.pages_per_node;
  pages.resize(nodes, 0.0);
  // Load counts a little: among nodes that hold about as much of the VM's
  // memory, the one with more free CPUs wins (new VMs spread out).
  double total = 1;
  for (double p : pages) total += p;
  std::vector<double> weighted = pages;
  for (int n = 0; n < nodes; ++n) {
    const double cpus = std::max<double>(1, topology.nodes[n].cpus.size());
    weighted[n] += 0.05 * total * free[n] / cpus;
  }
  GroupDemand demand{request.vcpus, weighted};
  HomeDecision best;
  best.nodes = PlaceGroups(topology, {demand}, free)[0];
  if (best.nodes.empty()) {
    // Not enough free CPUs anywhere: share nodes with other VMs, as few as
    // hold the vCPUs at all.
    std::vector<int> all(nodes);
    for (int n = 0; n < nodes; ++n) {
      all[n] = allowed(n) ? static_cast<int>(topology.nodes[n].cpus.size()) : 0;
    }
    best.nodes = PlaceGroups(topology, {demand}, all)[0];
    if (best.nodes.empty() && !request.allowed.empty()) {
      // Fewer allowed CPUs than vCPUs (an administrator's choice): every
      // allowed node that has CPUs.
      for (int n = 0; n < nodes; ++n) {
        if (allowed(n) && !topology.nodes[n].cpus.empty()) best.nodes.push_back(n);
      }
      if (!best.nodes.empty()) {
        best.reason = "allowed-nodes";
        best.changed = best.nodes != request.current;
        return best;
      }
    }
    if (best.nodes.empty()) {
      best.reason = "does-not-fit";
      best.nodes = request.current;
      return best;
    }
  }
  std::sort(best.nodes.begin(), best.nodes.end());
  if (request.current.empty()) {
    best.reason = "initial";
    best.changed = true;
    return best;
  }
  std::vector<int> current = request.current;
  std::sort(current.begin(), current.end());
  int current_free = 0;
  bool current_allowed = true;
  for (int n : current) {
    current_free += n >= 0 && n < nodes ? free[n] : 0;
    current_allowed = current_allowed && n >= 0 && n < nodes && allowed(n);
  }
  const bool fits = current_allowed && current_free >= request.vcpus;
  if (current == best.nodes) {
    best.reason = "kept";
    return best;
  }
  if (fits && current.size() <= best.nodes.size() &&
      SetScore(topology, weighted, current) * (1 + hysteresis) >=
          SetScore(topology, weighted, best.nodes)) {
    return {current, "kept", false};
  }
  best.reason = !current_allowed ? "not-allowed" : fits ? "better" : "current-overloaded";
  best.changed = true;
  return best;
}

}  // namespace numavm
