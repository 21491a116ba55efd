#include "balancer/policy/vcpu_placement.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace numavm {
namespace {

// Calls `visit` with every subset of `candidates` of size `k`.
template <typename Visit>
void ForEachSubset(const std::vector<int>& candidates, int k, Visit visit) {
  std::vector<int> pick;
  auto recurse = [&](auto&& self, size_t from) -> void {
    if (static_cast<int>(pick.size()) == k) {
      visit(pick);
      return;
    }
    for (size_t i = from; i < candidates.size(); ++i) {
      pick.push_back(candidates[i]);
      self(self, i + 1);
      pick.pop_back();
    }
  };
  recurse(recurse, 0);
}

}  // namespace

double NodeScore(const Topology& topology, const std::vector<double>& faults_per_node, int n) {
  double score = 0;
  for (int m = 0; m < topology.node_count() && m < static_cast<int>(faults_per_node.size()); ++m) {
    score += faults_per_node[m] * 10.0 / topology.distance[n][m];
  }
  return score;
}

int PreferredNode(const Topology& topology, const std::vector<double>& faults_per_node, int current,
                  double hysteresis) {
  int best = current;
  double best_score = current >= 0 ? NodeScore(topology, faults_per_node, current) : -1;
  const double keep = current >= 0 ? best_score * (1 + hysteresis) : -1;
  for (int n = 0; n < topology.node_count(); ++n) {
    if (topology.nodes[n].cpus.empty()) continue;  // memory-only nodes run nothing
    double s = NodeScore(topology, faults_per_node, n);
    if (s > best_score && s > keep) {
      best = n;
      best_score = s;
    }
  }
  return best;
}

std::vector<std::vector<int>> PlaceGroups(const Topology& topology,
                                          const std::vector<GroupDemand>& groups,
                                          std::vector<int> free_cpus) {
  std::vector<std::vector<int>> placement(groups.size());
  std::vector<size_t> order(groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return groups[a].vcpus > groups[b].vcpus; });
  for (size_t g : order) {
    const GroupDemand& demand = groups[g];
    std::vector<int> candidates;
    for (int n = 0; n < topology.node_count(); ++n) {
      if (n < static_cast<int>(free_cpus.size()) && free_cpus[n] > 0) candidates.push_back(n);
    }
    std::vector<int> best;
    double best_cost = std::numeric_limits<double>::infinity();
    // The fewest nodes that hold the group; among those sets, the one with
    // the smallest pairwise distances, then the most of its memory.
    for (int k = 1; k <= static_cast<int>(candidates.size()) && best.empty(); ++k) {
      ForEachSubset(candidates, k, [&](const std::vector<int>& set) {
        int cpus = 0;
        for (int n : set) cpus += free_cpus[n];
        if (cpus < demand.vcpus) return;
        double spread = 0, memory = 0;
        for (size_t i = 0; i < set.size(); ++i) {
          for (size_t j = i + 1; j < set.size(); ++j) spread += topology.distance[set[i]][set[j]];
          memory += NodeScore(topology, demand.faults_per_node, set[i]);
        }
        double cost = spread * 1e6 - memory;
        if (cost < best_cost) {
          best_cost = cost;
          best = set;
        }
      });
    }
    int left = demand.vcpus;
    for (int n : best) {
      int take = std::min(left, free_cpus[n]);
      free_cpus[n] -= take;
      left -= take;
    }
    placement[g] = best;
  }
  return placement;
}

}  // namespace numavm
