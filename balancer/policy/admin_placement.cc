#include "balancer/policy/admin_placement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace numavm {
namespace {

std::vector<int> OnlineCpus(const Topology& topology) {
  std::vector<int> online;
  for (const NumaNode& n : topology.nodes)
    online.insert(online.end(), n.cpus.begin(), n.cpus.end());
  std::sort(online.begin(), online.end());
  return online;
}

}  // namespace

CellConstraints ConstrainCell(const Topology& topology,
                              const std::vector<std::vector<int>>& may_run_on,
                              const std::vector<int>& vcpus,
                              const std::vector<MemoryBinding>& bindings) {
  const int nodes = topology.node_count();
  CellConstraints c;
  c.allowed.assign(nodes, true);
  std::vector<std::string> why;
  const std::vector<int> online = OnlineCpus(topology);
  for (int v : vcpus) {
    if (v < 0 || v >= static_cast<int>(may_run_on.size())) continue;
    std::vector<int> cpus = may_run_on[v];
    std::sort(cpus.begin(), cpus.end());
    // Unpinned means allowed on every online CPU (the host map may also list
    // offline ones).
    if (std::includes(cpus.begin(), cpus.end(), online.begin(), online.end())) continue;
    c.constrained = true;
    why.push_back(absl::StrCat("vCPU ", v, " may run only on CPUs ", absl::StrJoin(cpus, ",")));
    for (int n = 0; n < nodes; ++n) {
      const std::vector<int>& node_cpus = topology.nodes[n].cpus;
      const bool any = std::any_of(node_cpus.begin(), node_cpus.end(), [&](int cpu) {
        return std::binary_search(cpus.begin(), cpus.end(), cpu);
      });
      if (!any) c.allowed[n] = false;
    }
  }
  for (const MemoryBinding& b : bindings) {
    if (b.nodeset.empty()) continue;
    absl::StatusOr<std::vector<int>> ids = ParseCpuList(b.nodeset);
    if (!ids.ok()) {
      c.refused = absl::StrCat("its memory binding ", b.what, " nodeset='", b.nodeset,
                               "' is not understood");
      return c;
    }
    c.constrained = true;
    const std::string text = absl::StrCat(b.what, " mode='", b.mode, "' nodeset='", b.nodeset, "'");
    if (b.mode == "interleave" && ids->size() > 1) {
      c.refused = absl::StrCat("its memory is interleaved by ", text);
      return c;
    }
    why.push_back(absl::StrCat("memory bound by ", text));
    for (int n = 0; n < nodes; ++n) {
      if (std::find(ids->begin(), ids->end(), topology.nodes[n].id) == ids->end()) {
        c.allowed[n] = false;
      }
    }
  }
  c.why = absl::StrJoin(why, "; ");
  if (std::none_of(c.allowed.begin(), c.allowed.end(), [](bool a) { return a; })) {
    c.refused = absl::StrCat("no node satisfies all of: ", c.why);
  }
  return c;
}

std::vector<int> PinWithin(const Topology& topology, const std::vector<int>& home,
                           const std::vector<int>& may_run_on) {
  std::vector<int> cpus;
  for (int n : home) {
    if (n < 0 || n >= topology.node_count()) continue;
    for (int cpu : topology.nodes[n].cpus) {
      if (std::find(may_run_on.begin(), may_run_on.end(), cpu) != may_run_on.end()) {
        cpus.push_back(cpu);
      }
    }
  }
  if (cpus.empty()) cpus = may_run_on;
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string EmulatorPinNote(const Topology& topology, std::vector<int> emulator_cpus) {
  std::sort(emulator_cpus.begin(), emulator_cpus.end());
  const std::vector<int> online = OnlineCpus(topology);
  if (std::includes(emulator_cpus.begin(), emulator_cpus.end(), online.begin(), online.end())) {
    return "";
  }
  std::vector<int> nodes;
  for (const NumaNode& n : topology.nodes) {
    const bool any = std::any_of(n.cpus.begin(), n.cpus.end(), [&](int cpu) {
      return std::binary_search(emulator_cpus.begin(), emulator_cpus.end(), cpu);
    });
    if (any) nodes.push_back(n.id);
  }
  return absl::StrCat("emulator threads stay on CPUs ", absl::StrJoin(emulator_cpus, ","),
                      nodes.empty() ? " (no node of this host)"
                                    : absl::StrCat(nodes.size() == 1 ? " (node " : " (nodes ",
                                                   absl::StrJoin(nodes, ","), ")"),
                      ", where the administrator pinned them");
}

}  // namespace numavm
