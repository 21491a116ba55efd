#include "balancer/actuation/spare_cpus.h"

#include "base/proc_file.h"

namespace numavm {

SpareCpus::SpareCpus(Reader reader)
    : reader_(reader ? std::move(reader) : Reader([] { return ReadProcFile("/proc/stat"); })) {}

double SpareCpus::Sample() {
  std::optional<HostCpuTimes> now = ParseProcStat(reader_());
  if (!now || now->cpus <= 0) return -1;
  std::optional<HostCpuTimes> before = last_;
  last_ = now;
  if (!before || now->idle < before->idle || now->busy < before->busy) return -1;
  const uint64_t idle = now->idle - before->idle;
  const uint64_t total = idle + (now->busy - before->busy);
  if (total == 0) return -1;
  return static_cast<double>(idle) / static_cast<double>(total) * now->cpus;
}

}  // namespace numavm
