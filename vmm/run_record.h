// What the guest told the VMM during a run, timestamped by the VMM.
#ifndef NUMAVM_VMM_RUN_RECORD_H_
#define NUMAVM_VMM_RUN_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"

namespace numavm {

// Times are offsets from the moment VM creation began.
struct ProgressSample {
  absl::Duration at;
  uint64_t bytes = 0;  // cumulative bytes processed by the vCPU
};

struct PhaseMark {
  absl::Duration at;
  int vcpu = 0;
  std::string name;
};

struct ResultEntry {
  int vcpu = 0;
  std::string key;
  uint64_t value = 0;
};

struct VcpuRecord {
  std::optional<absl::Duration> started;  // first guest instruction reported
  std::optional<absl::Duration> exited;
  std::optional<uint32_t> exit_status;
  std::vector<ProgressSample> progress;

  uint64_t bytes() const { return progress.empty() ? 0 : progress.back().bytes; }
  // Steady-state rate between the first and last progress report (so the
  // first touch is excluded), or bytes over run time with fewer reports.
  double BytesPerSecond() const;
};

struct RunRecord {
  std::vector<VcpuRecord> vcpus;
  std::vector<PhaseMark> phases;
  std::vector<ResultEntry> results;
  std::vector<std::string> console;  // the first lines the guest printed
  uint64_t console_bytes = 0;

  // Sum of the results with `key` over all vCPUs, if any reported it.
  std::optional<uint64_t> SumResult(const std::string& key) const;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_RUN_RECORD_H_
