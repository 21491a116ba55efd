// CPU time of the calling thread: what a sampler or balancer costs.
#ifndef NUMAVM_BASE_THREAD_CPU_H_
#define NUMAVM_BASE_THREAD_CPU_H_

#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/time/time.h"
#include "base/proc_file.h"

namespace numavm {

inline absl::Duration ThreadCpuTime() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return absl::DurationFromTimespec(ts);
}

// CPU time thread `tid` of this process has used (from schedstat), or zero.
inline absl::Duration CpuTimeOfThread(int tid) {
  std::string text = ReadProcFile("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  return absl::Nanoseconds(static_cast<int64_t>(std::strtoull(text.c_str(), nullptr, 10)));
}

}  // namespace numavm

#endif  // NUMAVM_BASE_THREAD_CPU_H_
