#include "balancer/actuation/node_load.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/proc_file.h"
#include "base/thread_cpu.h"

namespace numavm {

std::vector<OwnCpuUse> ProcessCpuUse(pid_t pid, const std::string& proc_root) {
  std::vector<OwnCpuUse> out;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(absl::StrCat(proc_root, "/", pid, "/task"), ec)) {
    int tid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &tid) || tid <= 0) continue;
    const std::string dir = entry.path().string();
    out.push_back({absl::StrCat(pid, "/", tid), CpuTimeOfTask(dir), LastCpuOfTask(dir)});
  }
  return out;
}

NodeLoad::NodeLoad(const Topology& topology, Reader reader)
    : topology_(topology),
      node_index_of_cpu_(topology.NodeIndexOfCpus()),
      reader_(reader ? std::move(reader) : Reader([] { return ReadProcFile("/proc/stat"); })) {}

std::vector<double> NodeLoad::Sample(const std::vector<OwnCpuUse>& own) {
  const int nodes = topology_.node_count();
  std::optional<std::vector<CpuTicks>> now = ParsePerCpuStat(reader_());
  std::optional<std::vector<CpuTicks>> before = std::move(last_);
  std::map<std::string, absl::Duration> own_before = std::move(last_own_);
  last_ = now;
  last_own_.clear();
  for (const OwnCpuUse& o : own) last_own_[o.key] = o.cpu_time;
  if (!now || !before || now->empty()) return {};

  // Busy CPUs per node, and the wall time the ticks cover.
  std::vector<double> busy(nodes, 0.0);
  uint64_t ticks = 0;
  int counted = 0;
  for (size_t cpu = 0; cpu < now->size() && cpu < before->size(); ++cpu) {
    const CpuTicks& a = (*before)[cpu];
    const CpuTicks& b = (*now)[cpu];
    if (b.busy < a.busy || b.idle < a.idle) continue;  // a CPU came back online
    const uint64_t total = (b.busy - a.busy) + (b.idle - a.idle);
    if (total == 0) continue;
    ticks += total;
    ++counted;
    const int node = cpu < node_index_of_cpu_.size() ? node_index_of_cpu_[cpu] : -1;
    if (node >= 0 && node < nodes) {
      busy[node] += static_cast<double>(b.busy - a.busy) / static_cast<double>(total);
    }
  }
  if (counted == 0) return {};
  static const long kTicksPerSecond = sysconf(_SC_CLK_TCK);
  const double seconds =
      static_cast<double>(ticks) / counted / static_cast<double>(std::max(1L, kTicksPerSecond));
  // Less the VM's own, each on the node it last ran on.
  for (const OwnCpuUse& o : own) {
    auto was = own_before.find(o.key);
    const int node = o.last_cpu >= 0 && o.last_cpu < static_cast<int>(node_index_of_cpu_.size())
                         ? node_index_of_cpu_[o.last_cpu]
                         : -1;
    if (was == own_before.end() || node < 0 || node >= nodes || seconds <= 0) continue;
    const absl::Duration used = o.cpu_time - was->second;
    if (used > absl::ZeroDuration()) busy[node] -= absl::ToDoubleSeconds(used) / seconds;
  }
  for (double& b : busy) b = std::max(0.0, b);
  if (average_.size() != busy.size()) {
    average_ = busy;
  } else {
    for (int n = 0; n < nodes; ++n) average_[n] = (average_[n] + busy[n]) / 2;
  }
  return average_;
}

std::vector<double> NodeLoad::SampleEvery(absl::Duration interval, absl::Duration now,
                                          const std::function<std::vector<OwnCpuUse>()>& own) {
  if (last_read_ && now >= *last_read_ && now - *last_read_ < interval) return average_;
  last_read_ = now;
  return Sample(own());
}

}  // namespace numavm
