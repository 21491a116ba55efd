// numa02_read: see streaming.h and the workload table in README.md.
#include "workloads/streaming.h"

int WorkloadMain(const guest::Env& env) {
  return guest::RunStreaming(env,
                             {guest::Sharing::kSlice, guest::Access::kRead, /*half_vcpus=*/false});
}
