// The autonuma-benchmark family (numa01*, numa02*): one engine, parameterised
// by who shares which memory and whether vCPUs read or write it.
#ifndef NUMAVM_GUEST_TOOLS_WORKLOADS_STREAMING_H_
#define NUMAVM_GUEST_TOOLS_WORKLOADS_STREAMING_H_

#include "runtime/runtime.h"

namespace guest {

enum class Sharing {
  kGroupRegion,     // numa01: two vCPU groups, each sharing its own region
  kGroupThenSlice,  // numa01_thread_alloc: each vCPU its own slice
  kSlice,           // numa02: one region, each vCPU its own slice
};

enum class Access { kWrite, kRead };

struct StreamingShape {
  Sharing sharing;
  Access access;
  bool half_vcpus;  // numa02_smt: only half of the vCPUs work
};

int RunStreaming(const Env& env, const StreamingShape& shape);

}  // namespace guest

#endif  // NUMAVM_GUEST_TOOLS_WORKLOADS_STREAMING_H_
