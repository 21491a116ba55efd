#include "balancer/simulate/best_vcpu_placement.h"

#include <algorithm>
#include <cstddef>

namespace numavm {
namespace {

struct Use {
  size_t segment = 0;
  double weight = 0;  // the vCPU's accesses per second to the segment
};

class Search {
 public:
  Search(const Topology& topology, const WorkloadPhase& phase, std::vector<int> start)
      : nodes_(topology.node_count()),
        node_(std::move(start)),
        uses_(node_.size()),
        sum_(phase.segments.size(), std::vector<double>(nodes_, 0.0)),
        max_(phase.segments.size(), 0.0),
        stamp_(phase.segments.size(), 0) {
    const int vcpus = static_cast<int>(node_.size());
    for (size_t i = 0; i < phase.segments.size(); ++i) {
      const Segment& seg = phase.segments[i];
      for (int si : seg.streams) {
        const AccessStream& st = phase.streams[si];
        const double w = st.visits_per_second * seg.range.count / st.range.count;
        total_ += w;
        if (st.vcpu < 0 || st.vcpu >= vcpus) continue;
        std::vector<Use>& u = uses_[st.vcpu];
        if (!u.empty() && u.back().segment == i) {
          u.back().weight += w;
        } else {
          u.push_back({i, w});
        }
      }
    }
    // Room per node: its CPUs, or its share of the vCPUs when they
    // outnumber the host's CPUs; never less than started there.
    load_.assign(nodes_, 0);
    for (int n : node_) {
      if (Placed(n)) ++load_[n];
    }
    int cpus = 0;
    for (const NumaNode& n : topology.nodes) cpus += static_cast<int>(n.cpus.size());
    cap_.assign(nodes_, 0);
    for (int n = 0; n < nodes_; ++n) {
      const int own = static_cast<int>(topology.nodes[n].cpus.size());
      int room = own;
      if (cpus > 0 && vcpus > cpus) room = (vcpus * own + cpus - 1) / cpus;
      cap_[n] = std::max(room, load_[n]);
    }
    for (int v = 0; v < vcpus; ++v) Shift(v, -1, node_[v]);
    for (size_t s = 0; s < max_.size(); ++s) max_[s] = Max(s);
  }

  VcpuPlacementBest Run() {
    const int vcpus = static_cast<int>(node_.size());
    const double enough = 1e-9 * total_;
    // Passes over the vCPUs, each taking its best step (a move to a node
    // with room, or a swap), until a pass finds none.
    for (int pass = 0; total_ > 0 && pass < 64; ++pass) {
      bool stepped = false;
      for (int u = 0; u < vcpus; ++u) {
        if (!Placed(node_[u]) || uses_[u].empty()) continue;
        double best = enough;
        int to = -1, partner = -1;
        for (int q = 0; q < nodes_; ++q) {
          if (q == node_[u] || load_[q] >= cap_[q]) continue;
          const double g = Gain(u, q, -1);
          if (g > best) best = g, to = q, partner = -1;
        }
        for (int v = 0; v < vcpus; ++v) {
          if (!Placed(node_[v]) || node_[v] == node_[u]) continue;
          const double g = Gain(u, node_[v], v);
          if (g > best) best = g, to = node_[v], partner = v;
        }
        if (to < 0) continue;
        Apply(u, to, partner);
        stepped = true;
      }
      if (!stepped) break;
    }
    VcpuPlacementBest out;
    out.vcpu_nodes = node_;
    if (total_ <= 0) return out;
    // From scratch, free of the search's rounding.
    for (std::vector<double>& row : sum_) std::fill(row.begin(), row.end(), 0.0);
    for (int v = 0; v < vcpus; ++v) Shift(v, -1, node_[v]);
    double local = 0;
    for (size_t s = 0; s < sum_.size(); ++s) local += Max(s);
    out.locality = local / total_;
    return out;
  }

 private:
  bool Placed(int n) const { return n >= 0 && n < nodes_; }

  double Max(size_t s) const { return *std::max_element(sum_[s].begin(), sum_[s].end()); }

  void Shift(int v, int from, int to) {
    for (const Use& u : uses_[v]) {
      if (Placed(from)) sum_[u.segment][from] -= u.weight;
      if (Placed(to)) sum_[u.segment][to] += u.weight;
    }
  }

  // The segments vCPUs `u` and `v` (-1: none) use, once each.
  const std::vector<size_t>& Touched(int u, int v) {
    ++epoch_;
    touched_.clear();
    for (int w : {u, v}) {
      if (w < 0) continue;
      for (const Use& use : uses_[w]) {
        if (stamp_[use.segment] == epoch_) continue;
        stamp_[use.segment] = epoch_;
        touched_.push_back(use.segment);
      }
    }
    return touched_;
  }

  // What moving `u` to node `to` (and `v`, if any, to u's node) adds.
  double Gain(int u, int to, int v) {
    const int from = node_[u];
    Shift(u, from, to);
    if (v >= 0) Shift(v, to, from);
    double gain = 0;
    for (size_t s : Touched(u, v)) gain += Max(s) - max_[s];
    if (v >= 0) Shift(v, from, to);
    Shift(u, to, from);
    return gain;
  }

  void Apply(int u, int to, int v) {
    const int from = node_[u];
    Shift(u, from, to);
    node_[u] = to;
    if (v >= 0) {
      Shift(v, to, from);
      node_[v] = from;
    } else {
      --load_[from];
      ++load_[to];
    }
    for (size_t s : Touched(u, v)) max_[s] = Max(s);
  }

  const int nodes_;
  std::vector<int> node_;
  std::vector<std::vector<Use>> uses_;
  std::vector<std::vector<double>> sum_;  // [segment][node]: accesses from vCPUs there
  std::vector<double> max_;               // [segment]: its busiest node's
  std::vector<int> load_, cap_;
  double total_ = 0;
  std::vector<unsigned> stamp_;
  unsigned epoch_ = 0;
  std::vector<size_t> touched_;
};

}  // namespace

VcpuPlacementBest BestVcpuPlacement(const Topology& topology, const WorkloadPhase& phase,
                                    const std::vector<int>& start_nodes) {
  if (topology.node_count() == 0) return {0, start_nodes};
  return Search(topology, phase, start_nodes).Run();
}

}  // namespace numavm
