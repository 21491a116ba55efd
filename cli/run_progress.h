// `numavm run`'s progress line on stderr: every --stats-interval, and by
// default every kTerminalProgressInterval when stderr is a terminal. Each
// figure is labelled:
//   numavm: 12.0 s | guest work 1.2 GiB (vCPU 0: 600 MiB, 1: 600 MiB) |
//   samples 1234 | access locality 93.1% (recent 99.0%) |
//   migrated 120 MiB (30720 pages) | vCPU moves 2 | scan period 1s
#ifndef NUMAVM_CLI_RUN_PROGRESS_H_
#define NUMAVM_CLI_RUN_PROGRESS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "balancer/balancer_counters.h"
#include "balancer/sampling/access_sampler.h"

namespace numavm {

inline constexpr absl::Duration kTerminalProgressInterval = absl::Seconds(5);

struct ProgressInputs {
  absl::Duration elapsed;
  std::vector<uint64_t> vcpu_bytes;            // guest work so far, per vCPU
  const SamplerStats* sampler = nullptr;       // null: no sampler
  const BalancerCounters* balancer = nullptr;  // with a sampler
  absl::Duration scan_period;
};

std::string ProgressLine(const ProgressInputs& in);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_PROGRESS_H_
