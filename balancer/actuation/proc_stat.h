// /proc/stat's CPU lines: the host's CPU time so far, in clock ticks, for
// all CPUs together ("cpu") and for each ("cpuN"). Read by SpareCpus
// (idle CPUs for the page movers) and NodeLoad (other work per node).
#ifndef NUMAVM_BALANCER_ACTUATION_PROC_STAT_H_
#define NUMAVM_BALANCER_ACTUATION_PROC_STAT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/strings/string_view.h"

namespace numavm {

struct CpuTicks {
  uint64_t busy = 0;  // user, nice, system, irq, softirq, steal
  uint64_t idle = 0;  // idle and iowait
};

// One "cpu" or "cpuN" line's ticks (its name is not checked); nullopt if it
// has fewer than four figures or one is not a number.
std::optional<CpuTicks> ParseCpuTicks(absl::string_view line);

// All CPUs together, and how many CPUs the file lists.
struct HostCpuTimes : CpuTicks {
  int cpus = 0;
};
// nullopt if the text has no well-formed aggregate "cpu" line.
std::optional<HostCpuTimes> ParseProcStat(absl::string_view text);

// Each CPU's ticks, by CPU number (CPUs the file does not list - offline
// ones - read zero). nullopt if a "cpuN" line is malformed.
std::optional<std::vector<CpuTicks>> ParsePerCpuStat(absl::string_view text);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_PROC_STAT_H_
