#include "balancer/replay/replay.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "balancer/replay/model_placement_view.h"

namespace numavm {

absl::StatusOr<FirstTouch> ParseFirstTouch(absl::string_view name) {
  if (name == "boot") return FirstTouch::kBoot;
  if (name == "sampled") return FirstTouch::kSampled;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown first-touch model '", name, "' (want boot or sampled)"));
}

absl::string_view FirstTouchName(FirstTouch first_touch) {
  return first_touch == FirstTouch::kBoot ? "boot" : "sampled";
}

std::vector<int> StartVcpuNodes(const Topology& topology, int vcpus) {
  std::vector<int> cpu_nodes;
  for (int n = 0; n < topology.node_count(); ++n) {
    if (!topology.nodes[n].cpus.empty()) cpu_nodes.push_back(n);
  }
  std::vector<int> out(vcpus, cpu_nodes.empty() ? 0 : cpu_nodes[0]);
  if (cpu_nodes.empty()) return out;
  std::vector<int> used(topology.node_count(), 0);
  const int k = static_cast<int>(cpu_nodes.size());
  for (int v = 0; v < vcpus; ++v) {
    int i = static_cast<int>(static_cast<int64_t>(v) * k / vcpus);
    // Full (more vCPUs than CPUs): the next node with a free CPU, else stay.
    for (int tries = 0; tries < k; ++tries) {
      const int n = cpu_nodes[(i + tries) % k];
      if (used[n] < static_cast<int>(topology.nodes[n].cpus.size())) {
        i = (i + tries) % k;
        break;
      }
    }
    out[v] = cpu_nodes[i];
    ++used[cpu_nodes[i]];
  }
  return out;
}

BestPlacement ComputeBest(const AccessTrace& trace, const Topology& topology,
                          const std::vector<int>& vcpu_nodes, FirstTouch first_touch) {
  BestPlacement oracle;
  oracle.vcpu_nodes = vcpu_nodes;
  const int nodes = topology.node_count();
  const int boot_node = vcpu_nodes.empty() ? 0 : vcpu_nodes[0];
  struct PageCounts {
    std::vector<uint32_t> by_node;
    int first_node = -1;
  };
  std::unordered_map<uint64_t, PageCounts> pages;
  uint64_t attributed = 0;
  for (const TracePeriod& p : trace.periods) {
    for (const AccessSample& s : p.samples) {
      if (s.vcpu < 0 || s.vcpu >= static_cast<int>(vcpu_nodes.size())) continue;
      PageCounts& c = pages[s.gfn];
      if (c.by_node.empty()) {
        c.by_node.assign(nodes, 0);
        c.first_node = first_touch == FirstTouch::kBoot ? boot_node : vcpu_nodes[s.vcpu];
      }
      ++c.by_node[vcpu_nodes[s.vcpu]];
      ++attributed;
    }
  }
  uint64_t best_local = 0;
  for (const auto& [gfn, c] : pages) {
    // Ties keep the page where it was first touched.
    int best = c.first_node;
    for (int n = 0; n < nodes; ++n) {
      if (c.by_node[n] > c.by_node[best]) best = n;
    }
    best_local += c.by_node[best];
    if (best != c.first_node) ++oracle.min_page_moves;
  }
  oracle.pages = pages.size();
  oracle.locality = attributed == 0 ? 0.0 : static_cast<double>(best_local) / attributed;
  return oracle;
}

namespace {

// The trace's sampled accesses per page and vCPU: the access distribution
// ground truth weighs placements with.
class TraceAccesses {
 public:
  TraceAccesses(const AccessTrace& trace) {
    std::unordered_map<uint64_t, std::unordered_map<int, uint32_t>> counts;
    for (const TracePeriod& p : trace.periods) {
      for (const AccessSample& s : p.samples) {
        if (s.vcpu < 0 || s.vcpu >= trace.header.vcpus || s.gfn >= trace.header.pages) continue;
        ++counts[s.gfn][s.vcpu];
      }
    }
    for (const auto& [gfn, by_vcpu] : counts) {
      for (const auto& [vcpu, n] : by_vcpu) entries_.push_back({gfn, vcpu, n});
    }
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return a.gfn != b.gfn ? a.gfn < b.gfn : a.vcpu < b.vcpu;
    });
    for (const Entry& e : entries_) total_ += e.count;
  }
  double Locality(const ModelPlacementView& view, const std::vector<int>& vcpu_nodes) const {
    if (total_ == 0) return 0;
    uint64_t local = 0;
    for (const Entry& e : entries_) {
      if (view.NodeOf(e.gfn) == vcpu_nodes[e.vcpu]) local += e.count;
    }
    return static_cast<double>(local) / total_;
  }

 private:
  struct Entry {
    uint64_t gfn;
    int vcpu;
    uint32_t count;
  };
  std::vector<Entry> entries_;
  uint64_t total_ = 0;
};

}  // namespace

absl::StatusOr<ReplayResult> Replay(const AccessTrace& trace, const Topology& topology,
                                    const ReplayOptions& options) {
  const int vcpus = trace.header.vcpus;
  if (topology.node_count() == 0) return absl::InvalidArgumentError("the topology has no nodes");
  if (topology.node_count() >= PageState::kNoNode) {
    return absl::InvalidArgumentError("the model supports at most 254 nodes");
  }
  ReplayResult result;
  result.vcpu_start = StartVcpuNodes(topology, vcpus);
  result.best = ComputeBest(trace, topology, result.vcpu_start, options.first_touch);
  const TraceAccesses accesses(trace);

  RateLimiter limiter(options.migrate_bytes_per_second, options.migrate_bytes_per_second,
                      absl::ZeroDuration());
  ModelPlacementView view(topology, trace.header.pages, result.vcpu_start, &limiter);
  view.set_other_busy(options.other_busy);
  if (options.first_touch == FirstTouch::kBoot) {
    for (uint64_t g = 0; g < trace.header.pages; ++g) view.Touch(g, result.vcpu_start[0]);
  }
  VmBalancer balancer(options.mode, topology, vcpus, trace.header.pages, view, options.balancer);
  result.start_locality = accesses.Locality(view, view.VcpuNodes());
  for (const TracePeriod& p : trace.periods) {
    if (options.first_touch == FirstTouch::kSampled) {
      const std::vector<int> now = view.VcpuNodes();
      for (const AccessSample& s : p.samples) {
        view.Touch(s.gfn, s.vcpu >= 0 ? now[s.vcpu] : now[0]);
      }
    }
    if (absl::StatusOr<PeriodOutcome> o = balancer.OnBatch(p.samples, p.at); !o.ok()) {
      return o.status();
    }
    const double locality = accesses.Locality(view, view.VcpuNodes());
    const double seconds = absl::ToDoubleSeconds(p.at - trace.periods.front().at);
    result.series.push_back({absl::ToDoubleSeconds(p.at), locality, balancer.pages_migrated()});
    if (!result.seconds_to_90pct_of_best && locality >= 0.9 * result.best.locality) {
      result.seconds_to_90pct_of_best = seconds;
    }
    result.final_locality = locality;
  }
  if (trace.periods.empty()) result.final_locality = result.start_locality;
  result.counters = balancer.counters();
  result.vcpu_end = view.VcpuNodes();
  result.pages_per_node = view.pages_per_node();
  result.remigrations = view.remigrations();
  result.bounces = view.bounces();
  result.periods = trace.periods.size();
  if (!trace.periods.empty()) result.span = trace.periods.back().at - trace.periods.front().at;
  return result;
}

}  // namespace numavm
