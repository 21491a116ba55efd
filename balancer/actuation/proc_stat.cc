#include "balancer/actuation/proc_stat.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace numavm {
namespace {

// No machine has more CPUs than this; a line naming a larger number is bad.
constexpr int kMaxCpus = 1 << 16;

bool IsPerCpuLine(absl::string_view line) {
  return absl::StartsWith(line, "cpu") && line.size() > 3 && absl::ascii_isdigit(line[3]);
}

}  // namespace

std::optional<CpuTicks> ParseCpuTicks(absl::string_view line) {
  std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice]:
  // guest time is counted in user already.
  if (f.size() < 5) return std::nullopt;
  CpuTicks t;
  for (size_t i = 1; i < f.size() && i <= 8; ++i) {
    uint64_t v = 0;
    if (!absl::SimpleAtoi(f[i], &v)) return std::nullopt;
    (i == 4 || i == 5 ? t.idle : t.busy) += v;
  }
  return t;
}

std::optional<HostCpuTimes> ParseProcStat(absl::string_view text) {
  std::optional<HostCpuTimes> t;
  int cpus = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "cpu")) continue;
    if (line.size() > 3 && line[3] != ' ') {  // cpuN
      ++cpus;
      continue;
    }
    std::optional<CpuTicks> all = ParseCpuTicks(line);
    if (!all) return std::nullopt;
    t.emplace();
    static_cast<CpuTicks&>(*t) = *all;
  }
  if (t) t->cpus = cpus;
  return t;
}

std::optional<std::vector<CpuTicks>> ParsePerCpuStat(absl::string_view text) {
  std::vector<CpuTicks> cpus;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!IsPerCpuLine(line)) continue;
    const absl::string_view name = line.substr(0, line.find(' '));
    int cpu = 0;
    if (!absl::SimpleAtoi(name.substr(3), &cpu) || cpu < 0 || cpu >= kMaxCpus) {
      return std::nullopt;
    }
    std::optional<CpuTicks> t = ParseCpuTicks(line);
    if (!t) return std::nullopt;
    if (cpu >= static_cast<int>(cpus.size())) cpus.resize(cpu + 1);
    cpus[cpu] = *t;
  }
  return cpus;
}

}  // namespace numavm
