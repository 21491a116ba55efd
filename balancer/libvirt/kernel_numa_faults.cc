#include "balancer/libvirt/kernel_numa_faults.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/proc_file.h"

namespace numavm {

NodeFaults ParseNumaFaults(absl::string_view sched) {
  NodeFaults out;
  for (absl::string_view line : absl::StrSplit(sched, '\n')) {
    // "numa_faults node=1 task_private=12 task_shared=3 group_private=..."
    // (kernels before 6.x put a comma after each value).
    if (!absl::ConsumePrefix(&line, "numa_faults ")) continue;
    int node = -1;
    uint64_t faults = 0;
    bool valid = true;
    for (absl::string_view field : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
      absl::ConsumeSuffix(&field, ",");
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, '=');
      uint64_t value = 0;
      if (kv.first == "node") {
        valid = valid && absl::SimpleAtoi(kv.second, &node) && node >= 0;
      } else if (kv.first == "task_private" || kv.first == "task_shared") {
        valid = valid && absl::SimpleAtoi(kv.second, &value);
        faults += value;
      }
    }
    if (valid && node >= 0 && faults > 0) out[node] += faults;
  }
  return out;
}

std::map<int, NodeFaults> ReadVcpuNumaFaults(pid_t pid, const std::map<int, pid_t>& threads,
                                             const std::string& proc_root) {
  std::map<int, NodeFaults> out;
  for (const auto& [vcpu, tid] : threads) {
    const std::string text =
        ReadProcFile(absl::StrCat(proc_root, "/", pid, "/task/", tid, "/sched"));
    if (!text.empty()) out[vcpu] = ParseNumaFaults(text);
  }
  return out;
}

std::optional<double> KernelFaultLocality(const std::map<int, NodeFaults>& faults,
                                          const std::map<int, int>& vcpu_node) {
  double local = 0, all = 0;
  for (const auto& [vcpu, by_node] : faults) {
    auto home = vcpu_node.find(vcpu);
    if (home == vcpu_node.end()) continue;
    for (const auto& [node, n] : by_node) {
      all += static_cast<double>(n);
      if (node == home->second) local += static_cast<double>(n);
    }
  }
  if (all <= 0) return std::nullopt;
  return local / all;
}

}  // namespace numavm
