#include "balancer/vcpu_placer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "balancer/policy/vcpu_plan.h"
#include "base/thread_cpu.h"

namespace numavm {

VcpuPlacer::VcpuPlacer(BalanceMode mode, const Topology& topology, int vcpus, PlacementView& view,
                       VcpuPlacerConfig config)
    : mode_(mode),
      topology_(topology),
      view_(view),
      config_(std::move(config)),
      faults_(vcpus, topology.node_count()),
      home_(vcpus, -1),
      shared_(vcpus, std::vector<double>(vcpus, 0.0)),
      samples_(vcpus, 0.0),
      linked_(vcpus, std::vector<bool>(vcpus, false)),
      group_(vcpus),
      group_size_(vcpus, 1) {
  for (int v = 0; v < vcpus; ++v) group_[v] = v;
}

size_t VcpuPlacer::state_bytes() const {
  const size_t v = static_cast<size_t>(vcpus());
  return sizeof(double) * v * (topology_.node_count() + v + 1) + v * v / 8 + sizeof(int) * 3 * v;
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

std::vector<int> VcpuPlacer::Place(const std::vector<int>& running, absl::Duration now, bool hold,
                                   BalancerCounters& delta, absl::Duration sweep) {
  const int vcpus = this->vcpus();
  GroupingInput grouping{shared_, samples_, config_.cells};
  std::vector<int> before = group_;
  group_ = GroupVcpus(grouping, config_.grouping, linked_);
  joined_ = false;
  for (int v = 0; v < vcpus; ++v) {
    // Two vCPUs apart before and together now: a group formed or grew.
    for (int w = v + 1; w < vcpus && !joined_; ++w) {
      joined_ = group_[v] == group_[w] && before[v] != before[w];
    }
  }
  group_size_.assign(vcpus, 0);
  for (int v = 0; v < vcpus; ++v) ++group_size_[group_[v]];
  for (int v = 0; v < vcpus; ++v) delta.groups += group_size_[v] > 0 ? 1 : 0;
  delta.vcpu_group_of = group_;
  std::vector<int> effective(vcpus, -1);
  for (int v = 0; v < vcpus; ++v) {
    effective[v] = home_[v] >= 0                          ? home_[v]
                   : v < static_cast<int>(running.size()) ? running[v]
                                                          : -1;
  }
  if (!hold && config_.place_vcpus) {
    // Decide (policy/vcpu_plan.h), then act: only `on` pins, and a pin
    // that fails leaves the vCPU where it was.
    std::vector<std::vector<double>> faults(vcpus);
    for (int v = 0; v < vcpus; ++v) faults[v] = faults_.of(v);
    // Other work matters only where there is a choice of nodes (reading it
    // costs /proc/stat and two files a thread).
    const absl::Duration other_start = ThreadCpuTime();
    std::vector<double> other =
        topology_.CpuNodeIds().size() > 1 ? view_.OtherBusyCpus() : std::vector<double>{};
    delta.view_cpu_time += ThreadCpuTime() - other_start;
    const VcpuPlan plan = PlanVcpus(
        {&topology_, &faults, group_, home_, running, config_.guest_bytes, std::move(other)});
    delta.decisions += plan.decisions;
    for (const VcpuMove& m : plan.moves) {
      if (mode_ != BalanceMode::kOn) continue;
      const absl::Duration pin_start = ThreadCpuTime();
      const bool pinned = view_.PinVcpu(m.vcpu, m.node).ok();
      delta.view_cpu_time += ThreadCpuTime() - pin_start;
      if (!pinned) {
        ++delta.decisions[Decision::kVcpuPinFailed];
        continue;
      }
      home_[m.vcpu] = m.node;
      effective[m.vcpu] = m.node;
      if (m.changes_node) ++delta.vcpu_moves;
    }
  }
  DecayStats(now, std::max(config_.fault_half_life, sweep));
  return effective;
}

void VcpuPlacer::DecayStats(absl::Duration now, absl::Duration half_life) {
  // Forget by elapsed time: half of it every half_life.
  const absl::Duration elapsed = last_decay_ ? now - *last_decay_ : absl::ZeroDuration();
  last_decay_ = now;
  const double keep = elapsed <= absl::ZeroDuration() || half_life <= absl::ZeroDuration()
                          ? 0.5
                          : std::exp2(-absl::FDivDuration(elapsed, half_life));
  faults_.Decay(keep);
  for (auto& row : shared_) {
    for (double& s : row) s *= keep;
  }
  for (double& s : samples_) s *= keep;
}

}  // namespace numavm
