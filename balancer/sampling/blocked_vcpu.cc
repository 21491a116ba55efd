#include "balancer/sampling/blocked_vcpu.h"

#include <algorithm>
#include <string>

#include "base/proc_file.h"

namespace numavm {

char ThreadState(pid_t tid) {
  // "tid (comm) S ...": the state follows the last ')' (comm may hold any
  // character, ')' and spaces included).
  const std::string stat = ReadProcFile("/proc/self/task/" + std::to_string(tid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

int TheOneBlockedVcpu(const std::vector<pid_t>& vcpu_tids, const std::vector<int>& candidates) {
  std::vector<int> asleep;
  for (size_t i = 0; i < vcpu_tids.size(); ++i) {
    const char state = ThreadState(vcpu_tids[i]);
    if (state == 'S' || state == 'D') asleep.push_back(static_cast<int>(i));
  }
  if (asleep.size() == 1) return asleep[0];
  int found = -1;
  for (int v : asleep) {
    if (std::find(candidates.begin(), candidates.end(), v) == candidates.end()) continue;
    if (found >= 0) return -1;
    found = v;
  }
  return found;
}

FaultOwner WorkerFaultOwner::Of(uint64_t gfn, const std::vector<pid_t>& vcpu_tids) {
  const CellVcpus* cell = nullptr;
  for (const CellVcpus& c : cells_) {
    if (gfn < c.end_gfn) {
      cell = &c;
      break;
    }
  }
  FaultOwner owner;
  owner.vcpu = TheOneBlockedVcpu(vcpu_tids, cell != nullptr ? cell->vcpus : std::vector<int>{});
  if (owner.vcpu >= 0 || cells_.size() < 2 || cell == nullptr || cell->vcpus.empty()) {
    return owner;
  }
  owner.vcpu = cell->vcpus[turn_++ % cell->vcpus.size()];
  owner.by_cell = true;
  return owner;
}

}  // namespace numavm
