// CPU time of the calling thread: what a sampler or balancer costs; and
// where a thread of this process last ran.
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

// CPU time a task has used (from the schedstat of its /proc directory,
// e.g. "/proc/self/task/123"), or zero.
inline absl::Duration CpuTimeOfTask(const std::string& task_dir) {
  std::string text = ReadProcFile(task_dir + "/schedstat");
  return absl::Nanoseconds(static_cast<int64_t>(std::strtoull(text.c_str(), nullptr, 10)));
}

// The CPU a task last ran on (field 39 of its stat, counted from after the
// ")" that ends its name), or -1.
inline int LastCpuOfTask(const std::string& task_dir) {
  std::string stat = ReadProcFile(task_dir + "/stat");
  size_t at = stat.rfind(')');
  if (at == std::string::npos) return -1;
  for (int field = 2; field < 39; ++field) {
    at = stat.find(' ', at + 1);
    if (at == std::string::npos) return -1;
  }
  return std::atoi(stat.c_str() + at + 1);
}

// The same for thread `tid` of this process.
inline absl::Duration CpuTimeOfThread(int tid) {
  return CpuTimeOfTask("/proc/self/task/" + std::to_string(tid));
}
inline int LastCpuOfThread(int tid) {
  return LastCpuOfTask("/proc/self/task/" + std::to_string(tid));
}

}  // namespace numavm

#endif  // NUMAVM_BASE_THREAD_CPU_H_
