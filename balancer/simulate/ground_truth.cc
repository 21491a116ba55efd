#include "balancer/simulate/ground_truth.h"

#include <algorithm>

namespace numavm {

GroundTruth::GroundTruth(const Topology& topology, const WorkloadModel& workload,
                         std::vector<int> start_nodes, const ModelPlacementView& view)
    : topology_(topology), workload_(workload), start_nodes_(std::move(start_nodes)), view_(view) {
  // The oracle starts where first touch put the pages, run by run.
  const uint64_t pages = workload.working_set_pages();
  uint64_t first = 0;
  for (uint64_t g = 1; g <= pages; ++g) {
    if (g == pages || view.NodeOf(g) != view.NodeOf(first)) {
      oracle_[first] = {g, view.NodeOf(first)};
      first = g;
    }
  }
  SetPhase(0);
}

int GroundTruth::SegmentOf(uint64_t gfn) const {
  const std::vector<Segment>& segs = workload_.phases()[phase_].segments;
  auto it = std::upper_bound(segs.begin(), segs.end(), gfn,
                             [](uint64_t g, const Segment& s) { return g < s.range.first; });
  if (it == segs.begin()) return -1;
  --it;
  return it->range.Contains(gfn) ? static_cast<int>(it - segs.begin()) : -1;
}

void GroundTruth::SetPhase(size_t p) {
  phase_ = p;
  const WorkloadPhase& phase = workload_.phases()[p];
  const int nodes = topology_.node_count();
  on_node_.clear();
  total_weight_ = 0;
  double best_local = 0;
  for (const Segment& seg : phase.segments) {
    on_node_.push_back(view_.NodeCounts(seg.range));
    // Accesses per second to this segment from vCPUs started on each node.
    std::vector<double> use(nodes, 0.0);
    for (int si : seg.streams) {
      const AccessStream& st = phase.streams[si];
      const double w = st.visits_per_second * seg.range.count / st.range.count;
      total_weight_ += w;
      const int n = st.vcpu < static_cast<int>(start_nodes_.size()) ? start_nodes_[st.vcpu] : -1;
      if (n >= 0 && n < nodes) use[n] += w;
    }
    // The oracle's pages of this segment, per node, before this phase.
    std::vector<uint64_t> had(nodes, 0);
    auto it = oracle_.upper_bound(seg.range.first);
    if (it != oracle_.begin()) --it;
    for (; it != oracle_.end() && it->first < seg.range.end(); ++it) {
      const uint64_t a = std::max(it->first, seg.range.first);
      const uint64_t b = std::min(it->second.first, seg.range.end());
      if (b > a && it->second.second >= 0) had[it->second.second] += b - a;
    }
    // The busiest nodes (ties: pages on any of them stay there); pages
    // elsewhere go to the busiest that holds most of the segment already.
    double most = 0;
    for (int n = 0; n < nodes; ++n) most = std::max(most, use[n]);
    std::vector<bool> tied(nodes, false);
    int best = -1;
    uint64_t resident = 0, kept = 0;
    for (int n = 0; n < nodes; ++n) {
      resident += had[n];
      tied[n] = use[n] >= most * (1 - 1e-9);
      if (!tied[n]) continue;
      kept += had[n];
      if (best < 0 || had[n] > had[best]) best = n;
    }
    best_local += most;
    min_page_moves_ += resident - kept;
    Reassign(seg.range, [&](int node) { return node >= 0 && tied[node] ? node : best; });
  }
  best_ = total_weight_ > 0 ? best_local / total_weight_ : 0;
  best_moving_vcpus_ = BestVcpuPlacement(topology_, phase, start_nodes_);
}

void GroundTruth::Split(uint64_t at) {
  auto it = oracle_.upper_bound(at);
  if (it == oracle_.begin()) return;
  --it;
  if (it->first < at && it->second.first > at) {
    oracle_[at] = {it->second.first, it->second.second};
    it->second.first = at;
  }
}

void GroundTruth::Reassign(GfnRange range, const std::function<int(int)>& to) {
  Split(range.first);
  Split(range.end());
  for (auto it = oracle_.lower_bound(range.first); it != oracle_.end() && it->first < range.end();
       ++it) {
    it->second.second = to(it->second.second);
  }
}

void GroundTruth::OnMove(uint64_t gfn, int from, int to) {
  const int s = SegmentOf(gfn);
  if (s < 0) return;
  --on_node_[s][from];
  ++on_node_[s][to];
}

double GroundTruth::Locality(const std::vector<int>& vcpu_nodes) const {
  if (total_weight_ <= 0) return 0;
  const WorkloadPhase& phase = workload_.phases()[phase_];
  double local = 0;
  for (size_t i = 0; i < phase.segments.size(); ++i) {
    const Segment& seg = phase.segments[i];
    for (int si : seg.streams) {
      const AccessStream& st = phase.streams[si];
      const int n = st.vcpu < static_cast<int>(vcpu_nodes.size()) ? vcpu_nodes[st.vcpu] : -1;
      if (n < 0 || n >= topology_.node_count()) continue;
      local += st.visits_per_second * on_node_[i][n] / st.range.count;
    }
  }
  return local / total_weight_;
}

std::vector<double> GroundTruth::Speeds(const std::vector<int>& vcpu_nodes) const {
  const WorkloadPhase& phase = workload_.phases()[phase_];
  const int vcpus = static_cast<int>(vcpu_nodes.size());
  std::vector<double> weight(vcpus, 0.0), latency(vcpus, 0.0);
  for (size_t i = 0; i < phase.segments.size(); ++i) {
    const Segment& seg = phase.segments[i];
    for (int si : seg.streams) {
      const AccessStream& st = phase.streams[si];
      if (st.vcpu >= vcpus) continue;
      const int at = vcpu_nodes[st.vcpu];
      const double per_page = st.visits_per_second / st.range.count;
      for (int n = 0; n < topology_.node_count(); ++n) {
        const double w = per_page * on_node_[i][n];
        weight[st.vcpu] += w;
        latency[st.vcpu] += w * (at >= 0 ? topology_.distance[at][n] / 10.0 : 1.0);
      }
    }
  }
  std::vector<double> speed(vcpus, 1.0);
  for (int v = 0; v < vcpus; ++v) {
    if (weight[v] > 0) speed[v] = weight[v] / latency[v];
  }
  return speed;
}

}  // namespace numavm
