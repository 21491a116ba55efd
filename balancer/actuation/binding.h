// Static binding of memory and threads to host nodes (mbind, affinity).
#ifndef NUMAVM_BALANCER_ACTUATION_BINDING_H_
#define NUMAVM_BALANCER_ACTUATION_BINDING_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace numavm {

// mbind(MPOL_BIND) of [addr, addr + bytes) to `node`; moves pages already
// there (MPOL_MF_MOVE). `addr` and `bytes` must be page-aligned.
absl::Status BindMemoryToNode(void* addr, uint64_t bytes, int node);

// sched_setaffinity of thread `tid` to `cpus`.
absl::Status PinThread(pid_t tid, const std::vector<int>& cpus);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_BINDING_H_
