#include "balancer/policy/vcpu_plan.h"

#include <algorithm>
#include <cmath>

#include "balancer/policy/vcpu_placement.h"

namespace numavm {
namespace {

// The plan being made: where each vCPU will be, and the homes per node.
struct Planning {
  const VcpuPlanInput& in;
  int nodes;
  std::vector<int> home;       // as the plan leaves them
  std::vector<int> effective;  // home, else where it ran
  std::vector<int> load;       // homes per node
  VcpuPlan plan;

  const std::vector<double>& faults(int v) const { return (*in.faults)[v]; }

  void Move(int v, int node, VcpuMoveReason reason) {
    const bool changes = effective[v] != node;
    ++plan.decisions[changes ? Decision::kVcpuMove : Decision::kVcpuHome];
    plan.moves.push_back({v, node, changes, reason});
    if (home[v] >= 0 && home[v] < nodes) --load[home[v]];
    home[v] = node;
    ++load[node];
    effective[v] = node;
  }
};

void PlanGroups(Planning& p, const std::vector<std::vector<int>>& members,
                const std::vector<int>& cap, const VcpuHysteresis& hysteresis) {
  const Topology& topology = *p.in.topology;
  const int nodes = p.nodes;
  std::vector<int> order;
  for (size_t g = 0; g < members.size(); ++g) {
    if (members[g].size() > 1) order.push_back(static_cast<int>(g));
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return members[a].size() > members[b].size(); });
  for (int g : order) {
    const std::vector<int>& m = members[g];
    GroupDemand demand{static_cast<int>(m.size()), std::vector<double>(nodes, 0.0)};
    std::vector<int> free = cap;
    for (int n = 0; n < nodes; ++n) free[n] -= p.load[n];
    for (int v : m) {
      for (int n = 0; n < nodes; ++n) demand.faults_per_node[n] += p.faults(v)[n];
      if (p.home[v] >= 0 && p.home[v] < nodes) ++free[p.home[v]];
    }
    const std::vector<int> target = PlaceGroups(topology, {demand}, free)[0];
    if (target.empty()) {
      ++p.plan.decisions[Decision::kGroupDoesNotFit];
      continue;
    }
    // Keep a placement on as few nodes that scores nearly as well.
    std::vector<int> now_on;
    bool all_known = true;
    for (int v : m) {
      const int at = p.effective[v];
      if (at < 0 || at >= nodes) {
        all_known = false;
      } else if (std::find(now_on.begin(), now_on.end(), at) == now_on.end()) {
        now_on.push_back(at);
      }
    }
    double score_now = 0, score_target = 0;
    for (int n : now_on) score_now += NodeScore(topology, demand.faults_per_node, n);
    for (int n : target) score_target += NodeScore(topology, demand.faults_per_node, n);
    const bool keep = all_known && now_on.size() <= target.size() &&
                      score_now * (1 + hysteresis.group_keep) >= score_target;
    // A node for every member within `dest`: members stay where they are if
    // that is in `dest` and has room, the others take the best-scoring node
    // with room. Empty if they do not all fit.
    auto assign = [&](const std::vector<int>& dest) {
      std::vector<int> room(nodes, 0);
      for (int n : dest) room[n] = free[n];
      std::vector<int> to(m.size(), -1);
      for (size_t i = 0; i < m.size(); ++i) {
        const int at = p.effective[m[i]];
        if (at >= 0 && at < nodes && room[at] > 0) {
          --room[at];
          to[i] = at;
        }
      }
      for (size_t i = 0; i < m.size(); ++i) {
        if (to[i] >= 0) continue;
        int best = -1;
        for (int n : dest) {
          if (room[n] > 0 && (best < 0 || NodeScore(topology, demand.faults_per_node, n) >
                                              NodeScore(topology, demand.faults_per_node, best))) {
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
    const bool kept = !to.empty();
    if (!kept) to = assign(target);
    if (to.empty()) {
      ++p.plan.decisions[Decision::kGroupDoesNotFit];
      continue;
    }
    for (size_t i = 0; i < m.size(); ++i) {
      if (p.home[m[i]] != to[i]) {
        p.Move(m[i], to[i], kept ? VcpuMoveReason::kGroupKept : VcpuMoveReason::kGroupPlaced);
      }
    }
  }
}

// The node with room (but `except`) that scores best for `v`'s memory; -1
// if none has room.
int BestRoom(const Planning& p, const std::vector<int>& cap, int v, int except) {
  const Topology& topology = *p.in.topology;
  int best = -1;
  for (int n = 0; n < p.nodes; ++n) {
    if (n == except || topology.nodes[n].cpus.empty() || p.load[n] >= cap[n]) continue;
    if (best < 0 || NodeScore(topology, p.faults(v), n) > NodeScore(topology, p.faults(v), best)) {
      best = n;
    }
  }
  return best;
}

void PlanSingles(Planning& p, const std::vector<std::vector<int>>& members,
                 const std::vector<int>& cap, const VcpuHysteresis& hysteresis) {
  const Topology& topology = *p.in.topology;
  const int nodes = p.nodes;
  const int vcpus = static_cast<int>(p.home.size());
  for (int v = 0; v < vcpus; ++v) {
    if (members[p.in.group[v]].size() > 1) continue;
    const int current = p.effective[v];
    const int preferred = PreferredNode(topology, p.faults(v), current, hysteresis.node_preference);
    if (preferred < 0) continue;  // no evidence yet
    if (p.home[v] >= 0) {
      // A node holding more homes than its room now (other work came, or
      // the VM no longer fits it) gives up the extra ones.
      const bool over = current >= 0 && current < nodes && p.load[current] > cap[current];
      if (preferred == current && !over) continue;
      if (preferred != current && p.load[preferred] < cap[preferred]) {
        p.Move(v, preferred, VcpuMoveReason::kPreferred);
        continue;
      }
      const int best = over ? BestRoom(p, cap, v, current) : -1;
      if (best < 0) {
        ++p.plan.decisions[Decision::kVcpuNodeFull];
        continue;
      }
      p.Move(v, best, VcpuMoveReason::kBestRoom);
      continue;
    }
    // No home yet: the preferred node if it has room. Left unpinned, the
    // host scheduler would move the vCPU between nodes and its pages would
    // look shared.
    if (p.load[preferred] < cap[preferred]) {
      p.Move(v, preferred, VcpuMoveReason::kPreferred);
      continue;
    }
    // Else where it runs now, if there is room: moving it only closer to
    // memory that will come to it anyway would cost a move for nothing.
    if (current >= 0 && current < nodes && !topology.nodes[current].cpus.empty() &&
        p.load[current] < cap[current]) {
      p.Move(v, current, VcpuMoveReason::kWhereItRuns);
      continue;
    }
    const int best = BestRoom(p, cap, v, -1);
    if (best < 0) {
      ++p.plan.decisions[Decision::kVcpuNodeFull];
      continue;
    }
    p.Move(v, best, VcpuMoveReason::kBestRoom);
  }
}

}  // namespace

int FreeCpus(const Topology& topology, const std::vector<double>& other_busy, int node,
             double keep) {
  const int cpus = static_cast<int>(topology.nodes[node].cpus.size());
  const double busy = (node < static_cast<int>(other_busy.size()) ? other_busy[node] : 0.0) - keep;
  // Not lround of a huge or NaN figure: clamp first.
  const double clamped = std::clamp(std::isnan(busy) ? 0.0 : busy, 0.0, static_cast<double>(cpus));
  return cpus - static_cast<int>(std::lround(clamped));
}

bool FitsNode(const Topology& topology, const std::vector<double>& other_busy, int node, int vcpus,
              uint64_t vm_bytes, double keep) {
  const NumaNode& n = topology.nodes[node];
  return !n.cpus.empty() && FreeCpus(topology, other_busy, node, keep) >= vcpus &&
         (n.memory_bytes == 0 || n.memory_bytes >= vm_bytes);
}

VcpuPlan PlanVcpus(const VcpuPlanInput& in, const VcpuHysteresis& hysteresis) {
  const Topology& topology = *in.topology;
  const int vcpus = static_cast<int>(in.home.size());
  const int nodes = topology.node_count();
  Planning p{in, nodes, in.home, std::vector<int>(vcpus, -1), std::vector<int>(nodes, 0), {}};
  // vCPUs without a home run where the host scheduler puts them and count
  // nowhere until they get one.
  for (int v = 0; v < vcpus; ++v) {
    p.effective[v] = in.home[v] >= 0                           ? in.home[v]
                     : v < static_cast<int>(in.running.size()) ? in.running[v]
                                                               : -1;
    if (in.home[v] >= 0 && in.home[v] < nodes) ++p.load[in.home[v]];
  }
  std::vector<std::vector<int>> members(vcpus);
  for (int v = 0; v < vcpus; ++v) members[in.group[v]].push_back(v);
  size_t biggest = 1;
  for (const auto& m : members) biggest = std::max(biggest, m.size());
  int cpu_nodes = 0;
  for (const NumaNode& n : topology.nodes) cpu_nodes += n.cpus.empty() ? 0 : 1;
  if (cpu_nodes > 1) {
    // A node's room: its CPUs, and no more than a fair share unless one
    // group needs more - or, where the VM fits the node, all of it.
    const int fair = (vcpus + cpu_nodes - 1) / cpu_nodes;
    std::vector<int> cap(nodes);
    bool fits_one = false;
    for (int n = 0; n < nodes; ++n) {
      const int cpus = static_cast<int>(topology.nodes[n].cpus.size());
      const double keep = p.load[n] > 0 ? hysteresis.fit_keep : 0.0;
      const bool fits = FitsNode(topology, in.other_busy, n, vcpus, in.vm_bytes, keep);
      fits_one |= fits;
      cap[n] = fits ? cpus : std::min(cpus, std::max(fair, static_cast<int>(biggest)));
    }
    if (fits_one) ++p.plan.decisions[Decision::kVmFitsNode];
    PlanGroups(p, members, cap, hysteresis);
    PlanSingles(p, members, cap, hysteresis);
  }
  p.plan.nodes = p.effective;
  return p.plan;
}

}  // namespace numavm
