#include "balancer/policy/vcpu_groups.h"

#include <algorithm>
#include <numeric>

namespace numavm {
namespace {

int Find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

void Union(std::vector<int>& parent, int a, int b) {
  a = Find(parent, a);
  b = Find(parent, b);
  if (a != b) parent[std::max(a, b)] = std::min(a, b);
}

}  // namespace

std::vector<int> GroupVcpus(const GroupingInput& in, const GroupingConfig& config,
                            std::vector<std::vector<bool>>& linked) {
  const int n = static_cast<int>(in.samples.size());
  linked.resize(n);
  for (auto& row : linked) row.resize(n, false);
  std::vector<int> parent(n);
  std::iota(parent.begin(), parent.end(), 0);
  for (const std::vector<int>& cell : in.cells) {
    for (size_t i = 1; i < cell.size(); ++i) {
      if (cell[0] >= 0 && cell[0] < n && cell[i] >= 0 && cell[i] < n) {
        Union(parent, cell[0], cell[i]);
      }
    }
  }
  // How many partners each vCPU shares with about equally: its hand-overs
  // over its largest pair's. In a group of g vCPUs each pair sees about
  // 1/(g-1) of a member's hand-overs, so the pair thresholds scale by 2/g
  // (unchanged for pairs); noise spread thinly over every vCPU stays below
  // them, and a vCPU must hand over at least `join` of its samples to be
  // sharing at all.
  std::vector<double> scale(n, 1.0);
  std::vector<bool> sharer(n, false);
  for (int a = 0; a < n && a < static_cast<int>(in.shared.size()); ++a) {
    double total = 0, most = 0;
    for (int b = 0; b < n && b < static_cast<int>(in.shared[a].size()); ++b) {
      if (b == a) continue;
      total += in.shared[a][b];
      most = std::max(most, in.shared[a][b]);
    }
    if (most > 0) scale[a] = std::min(1.0, 2.0 / (1.0 + total / most));
    sharer[a] = in.samples[a] > 0 && total >= config.join * in.samples[a];
  }
  for (int a = 0; a < n && a < static_cast<int>(in.shared.size()); ++a) {
    for (int b = a + 1; b < n && b < static_cast<int>(in.shared[a].size()); ++b) {
      const double base = std::min(in.samples[a], in.samples[b]);
      const double shared = in.shared[a][b];
      const double k = std::max(scale[a], scale[b]);
      bool link = linked[a][b];
      if (!link) {
        link = sharer[a] && sharer[b] && shared >= std::max(4.0, config.min_shared * k) &&
               shared >= config.join * k * base;
      } else if (base > 0 && shared < config.leave * k * base) {
        link = false;
      }
      linked[a][b] = linked[b][a] = link;
      if (link) Union(parent, a, b);
    }
  }
  std::vector<int> group(n);
  for (int v = 0; v < n; ++v) group[v] = Find(parent, v);
  return group;
}

}  // namespace numavm
