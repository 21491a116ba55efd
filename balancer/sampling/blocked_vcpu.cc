#include "balancer/sampling/blocked_vcpu.h"

#include <string>

#include "balancer/sampling/proc_file.h"

namespace numavm {

char ThreadState(pid_t tid) {
  // "tid (comm) S ...": the state follows the last ')' (comm may hold any
  // character, ')' and spaces included).
  const std::string stat = ReadProcFile("/proc/self/task/" + std::to_string(tid) + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return 0;
  return stat[close + 2];
}

int TheOneBlockedVcpu(const std::vector<pid_t>& vcpu_tids) {
  int found = -1;
  for (size_t i = 0; i < vcpu_tids.size(); ++i) {
    const char state = ThreadState(vcpu_tids[i]);
    if (state != 'S' && state != 'D') continue;
    if (found >= 0) return -1;
    found = static_cast<int>(i);
  }
  return found;
}

}  // namespace numavm
