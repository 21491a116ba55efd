#include "balancer/actuation/binding.h"

#include <numaif.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace numavm {

absl::Status BindMemoryToNode(void* addr, uint64_t bytes, int node) {
  constexpr int kMaskBits = 1024;
  if (node < 0 || node >= kMaskBits) {
    return absl::InvalidArgumentError(absl::StrCat("bad node ", node));
  }
  unsigned long mask[kMaskBits / (8 * sizeof(unsigned long))] = {};
  mask[node / (8 * sizeof(unsigned long))] |= 1ul << (node % (8 * sizeof(unsigned long)));
  if (mbind(addr, bytes, MPOL_BIND, mask, kMaskBits, MPOL_MF_MOVE) != 0) {
    return ErrnoStatus(errno, absl::StrCat("mbind of ", bytes, " bytes to node ", node));
  }
  return absl::OkStatus();
}

absl::Status PinThread(pid_t tid, const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  if (sched_setaffinity(tid, sizeof(set), &set) != 0) {
    return ErrnoStatus(errno, absl::StrCat("sched_setaffinity of thread ", tid));
  }
  return absl::OkStatus();
}

}  // namespace numavm
