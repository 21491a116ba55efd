#include "balancer/actuation/spare_cpus.h"

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/proc_file.h"

namespace numavm {

std::optional<HostCpuTimes> ParseProcStat(absl::string_view text) {
  std::optional<HostCpuTimes> t;
  int cpus = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "cpu")) continue;
    if (line.size() > 3 && line[3] != ' ') {  // cpuN
      ++cpus;
      continue;
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    // cpu user nice system idle iowait irq softirq steal [guest guest_nice]:
    // guest time is counted in user already.
    if (f.size() < 5) return std::nullopt;
    HostCpuTimes c;
    for (size_t i = 1; i < f.size() && i <= 8; ++i) {
      uint64_t v = 0;
      if (!absl::SimpleAtoi(f[i], &v)) return std::nullopt;
      (i == 4 || i == 5 ? c.idle : c.busy) += v;
    }
    t = c;
  }
  if (t) t->cpus = cpus;
  return t;
}

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
