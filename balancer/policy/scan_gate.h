// Small or idle VMs must not pay for scanning: a pure decision, per period,
// whether to arm the next window.
#ifndef NUMAVM_BALANCER_POLICY_SCAN_GATE_H_
#define NUMAVM_BALANCER_POLICY_SCAN_GATE_H_

#include <cstdint>

#include "absl/time/time.h"

namespace numavm {

struct ScanGateConfig {
  // The VM is idle when its vCPUs together ran less than this fraction of
  // one vCPU-period.
  double idle_fraction = 0.05;
  // A VM with less memory than this is not scanned unless asked: all of it
  // is a few MiB from anywhere, and every scan costs guest time.
  uint64_t min_guest_bytes = 32ull << 20;
};

inline bool WorthScanning(uint64_t guest_bytes, const ScanGateConfig& config = {}) {
  return guest_bytes >= config.min_guest_bytes;
}

// `vcpu_busy`: CPU time all vCPU threads used during the last `period`.
inline bool ShouldScan(absl::Duration vcpu_busy, absl::Duration period,
                       const ScanGateConfig& config = {}) {
  return vcpu_busy >= period * config.idle_fraction;
}

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_SCAN_GATE_H_
