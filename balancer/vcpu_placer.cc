#include "balancer/vcpu_placer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "balancer/policy/vcpu_placement.h"

namespace numavm {

VcpuPlacer::VcpuPlacer(BalanceMode mode, const Topology& topology, int vcpus,
                       PlacementView& view, VcpuPlacerConfig config)
    : mode_(mode), topology_(topology), view_(view), config_(std::move(config)),
      faults_(vcpus, topology.node_count()), home_(vcpus, -1),
      shared_(vcpus, std::vector<double>(vcpus, 0.0)), samples_(vcpus, 0.0),
      linked_(vcpus, std::vector<bool>(vcpus, false)), group_(vcpus), group_size_(vcpus, 1) {
  for (int v = 0; v < vcpus; ++v) group_[v] = v;
}

size_t VcpuPlacer::state_bytes() const {
  const size_t v = static_cast<size_t>(vcpus());
  return sizeof(double) * v * (topology_.node_count() + v + 1) + v * v / 8 +
         sizeof(int) * 3 * v;
}

std::vector<VcpuPlacer::GroupSpan> VcpuPlacer::GroupSpans(
    const std::vector<int>& vcpu_nodes) const {
  const int vcpus = this->vcpus();
  const int nodes = topology_.node_count();
  std::vector<GroupSpan> spans(vcpus);
  std::vector<std::vector<int>> members(vcpus);  // [group][node]
  for (int v = 0; v < vcpus; ++v) {
    if (!grouped(v)) continue;
    GroupSpan& span = spans[group_[v]];
    span.nodes.resize(nodes, false);
    members[group_[v]].resize(nodes, 0);
    if (v < static_cast<int>(vcpu_nodes.size()) && vcpu_nodes[v] >= 0 && vcpu_nodes[v] < nodes) {
      span.nodes[vcpu_nodes[v]] = true;
      ++members[group_[v]][vcpu_nodes[v]];
    }
  }
  for (int g = 0; g < vcpus; ++g) {
    GroupSpan& span = spans[g];
    if (span.nodes.empty()) continue;
    std::vector<double> faults(nodes, 0.0);
    for (int v = 0; v < vcpus; ++v) {
      if (group_[v] != g) continue;
      for (int n = 0; n < nodes; ++n) faults[n] += faults_.of(v)[n];
    }
    const int most = *std::max_element(members[g].begin(), members[g].end());
    span.busiest.assign(nodes, false);
    for (int n = 0; n < nodes; ++n) {
      if (!span.nodes[n] || members[g][n] < most) continue;
      span.busiest[n] = true;
      if (span.primary < 0 || faults[n] > faults[span.primary]) span.primary = n;
    }
    span.multi_node = std::count(span.nodes.begin(), span.nodes.end(), true) > 1;
  }
  return spans;
}

bool VcpuPlacer::MoveVcpu(int v, int node, std::vector<int>& effective, std::vector<int>& load,
                          BalancerCounters& delta) {
  // Pinning a vCPU where it runs gives it a home; only a change of node is a move.
  const bool moves = effective[v] != node;
  ++delta.decisions[moves ? Decision::kVcpuMove : Decision::kVcpuHome];
  if (mode_ != BalanceMode::kOn) return false;
  if (!view_.PinVcpu(v, node).ok()) {
    ++delta.decisions[Decision::kVcpuPinFailed];
    return false;
  }
  if (home_[v] >= 0 && home_[v] < topology_.node_count()) --load[home_[v]];
  home_[v] = node;
  ++load[node];
  effective[v] = node;
  if (moves) ++delta.vcpu_moves;
  return true;
}

std::vector<int> VcpuPlacer::Place(const std::vector<int>& running, absl::Duration now, bool hold,
                                   BalancerCounters& delta, absl::Duration sweep) {
  const int vcpus = this->vcpus();
  const int nodes = topology_.node_count();
  std::vector<int> effective(vcpus, -1);
  // This VM's vCPUs with a home on each node. vCPUs without one run where
  // the host scheduler puts them and count nowhere until they get one.
  std::vector<int> load(nodes, 0);
  for (int v = 0; v < vcpus; ++v) {
    effective[v] = home_[v] >= 0                             ? home_[v]
                   : v < static_cast<int>(running.size()) ? running[v]
                                                            : -1;
    if (home_[v] >= 0 && home_[v] < nodes) ++load[home_[v]];
  }

  GroupingInput grouping{shared_, samples_, config_.cells};
  group_ = GroupVcpus(grouping, config_.grouping, linked_);
  group_size_.assign(vcpus, 0);
  for (int v = 0; v < vcpus; ++v) ++group_size_[group_[v]];
  std::vector<std::vector<int>> members(vcpus);
  for (int v = 0; v < vcpus; ++v) members[group_[v]].push_back(v);
  size_t biggest = 1;
  for (const auto& m : members) {
    biggest = std::max(biggest, m.size());
    if (!m.empty()) ++delta.groups;
  }
  int cpu_nodes = 0;
  for (const NumaNode& n : topology_.nodes) cpu_nodes += n.cpus.empty() ? 0 : 1;
  if (cpu_nodes > 1 && !hold) {
    // How many of this VM's vCPUs a node takes: its CPUs, and no more than a
    // fair share unless one group needs more - private vCPUs stay spread
    // (and their memory comes to them) instead of piling onto the node that
    // happened to touch the memory first.
    const int fair = (vcpus + cpu_nodes - 1) / cpu_nodes;
    std::vector<int> cap(nodes);
    for (int n = 0; n < nodes; ++n) {
      cap[n] = std::min(static_cast<int>(topology_.nodes[n].cpus.size()),
                        std::max(fair, static_cast<int>(biggest)));
    }
    PlaceGroupsOfVcpus(members, cap, effective, load, delta);
    PlaceSingles(members, cap, effective, load, delta);
  }
  DecayStats(now, std::max(config_.fault_half_life, sweep));
  return effective;
}

void VcpuPlacer::PlaceGroupsOfVcpus(const std::vector<std::vector<int>>& members,
                                    const std::vector<int>& cap, std::vector<int>& effective,
                                    std::vector<int>& load, BalancerCounters& delta) {
  const int nodes = topology_.node_count();
  std::vector<int> order;
  for (int g = 0; g < vcpus(); ++g) {
    if (members[g].size() > 1) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return members[a].size() > members[b].size(); });
  for (int g : order) {
    const std::vector<int>& m = members[g];
    GroupDemand demand{static_cast<int>(m.size()), std::vector<double>(nodes, 0.0)};
    std::vector<int> free = cap;
    for (int n = 0; n < nodes; ++n) free[n] -= load[n];
    for (int v : m) {
      for (int n = 0; n < nodes; ++n) demand.faults_per_node[n] += faults_.of(v)[n];
      if (home_[v] >= 0 && home_[v] < nodes) ++free[home_[v]];
    }
    const std::vector<int> target = PlaceGroups(topology_, {demand}, free)[0];
    if (target.empty()) {
      ++delta.decisions[Decision::kGroupDoesNotFit];
      continue;
    }
    // Hysteresis: keep a placement on as few nodes that scores nearly as
    // well - but give its members homes there: vCPUs left to the host
    // scheduler wander between nodes, and their pages would follow them.
    std::vector<int> now_on;
    bool all_known = true;
    for (int v : m) {
      if (effective[v] < 0 || effective[v] >= nodes) {
        all_known = false;
      } else if (std::find(now_on.begin(), now_on.end(), effective[v]) == now_on.end()) {
        now_on.push_back(effective[v]);
      }
    }
    double score_now = 0, score_target = 0;
    for (int n : now_on) score_now += NodeScore(topology_, demand.faults_per_node, n);
    for (int n : target) score_target += NodeScore(topology_, demand.faults_per_node, n);
    const bool keep =
        all_known && now_on.size() <= target.size() && score_now * 1.1 >= score_target;
    // A node for every member within `dest`: members stay where they are if
    // that is in `dest` and has room, the others take the best-scoring node
    // with room. Empty if they do not all fit.
    auto assign = [&](const std::vector<int>& dest) {
      std::vector<int> room(nodes, 0);
      for (int n : dest) room[n] = free[n];
      std::vector<int> to(m.size(), -1);
      for (size_t i = 0; i < m.size(); ++i) {
        const int at = effective[m[i]];
        if (at >= 0 && at < nodes && room[at] > 0) {
          --room[at];
          to[i] = at;
        }
      }
      for (size_t i = 0; i < m.size(); ++i) {
        if (to[i] >= 0) continue;
        int best = -1;
        for (int n : dest) {
          if (room[n] > 0 && (best < 0 || NodeScore(topology_, demand.faults_per_node, n) >
                                              NodeScore(topology_, demand.faults_per_node, best))) {
            best = n;
          }
        }
        if (best < 0) return std::vector<int>{};
        --room[best];
        to[i] = best;
      }
      return to;
    };
    std::vector<int> to = keep ? assign(now_on) : std::vector<int>{};
    if (to.empty()) to = assign(target);
    if (to.empty()) {
      ++delta.decisions[Decision::kGroupDoesNotFit];
      continue;
    }
    for (size_t i = 0; i < m.size(); ++i) {
      if (home_[m[i]] != to[i]) MoveVcpu(m[i], to[i], effective, load, delta);
    }
  }
}

void VcpuPlacer::PlaceSingles(const std::vector<std::vector<int>>& members,
                              const std::vector<int>& cap, std::vector<int>& effective,
                              std::vector<int>& load, BalancerCounters& delta) {
  const int nodes = topology_.node_count();
  for (int v = 0; v < vcpus(); ++v) {
    if (members[group_[v]].size() > 1) continue;
    const int current = effective[v];
    const int preferred = PreferredNode(topology_, faults_.of(v), current);
    if (preferred < 0) continue;  // no evidence yet
    if (home_[v] >= 0) {
      if (preferred == current) continue;
      if (load[preferred] >= cap[preferred]) {
        ++delta.decisions[Decision::kVcpuNodeFull];
        continue;
      }
      MoveVcpu(v, preferred, effective, load, delta);
      continue;
    }
    // No home yet: the preferred node if it has room, else the best node
    // that has (below). Left unpinned, the host scheduler would move the vCPU
    // between nodes and its pages would look shared.
    int target = load[preferred] < cap[preferred] ? preferred : -1;
    // Else where it runs now, if there is room: moving it only closer to
    // memory that will come to it anyway would cost a move for nothing.
    if (target < 0 && current >= 0 && current < nodes && !topology_.nodes[current].cpus.empty() &&
        load[current] < cap[current]) {
      target = current;
    }
    for (int n = 0; n < nodes && target < 0; ++n) {
      if (topology_.nodes[n].cpus.empty() || load[n] >= cap[n]) continue;
      int best = n;
      for (int k = n + 1; k < nodes; ++k) {
        if (!topology_.nodes[k].cpus.empty() && load[k] < cap[k] &&
            NodeScore(topology_, faults_.of(v), k) > NodeScore(topology_, faults_.of(v), best)) {
          best = k;
        }
      }
      target = best;
    }
    if (target < 0) {
      ++delta.decisions[Decision::kVcpuNodeFull];
      continue;
    }
    MoveVcpu(v, target, effective, load, delta);
  }
}

void VcpuPlacer::DecayStats(absl::Duration now, absl::Duration half_life) {
  // Forget by elapsed time: half of it every half_life.
  const absl::Duration elapsed = last_decay_ ? now - *last_decay_ : absl::ZeroDuration();
  last_decay_ = now;
  const double keep =
      elapsed <= absl::ZeroDuration() || half_life <= absl::ZeroDuration()
          ? 0.5
          : std::exp2(-absl::FDivDuration(elapsed, half_life));
  faults_.Decay(keep);
  for (auto& row : shared_) {
    for (double& s : row) s *= keep;
  }
  for (double& s : samples_) s *= keep;
}

}  // namespace numavm
