// CPU time of the calling thread: what a sampler or balancer costs.
#ifndef NUMAVM_BALANCER_SAMPLING_THREAD_CPU_H_
#define NUMAVM_BALANCER_SAMPLING_THREAD_CPU_H_

#include <time.h>

#include "absl/time/time.h"

namespace numavm {

inline absl::Duration ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_THREAD_CPU_H_
