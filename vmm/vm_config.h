// Everything needed to build a VM, validated before anything is created.
#ifndef NUMAVM_VMM_VM_CONFIG_H_
#define NUMAVM_VMM_VM_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "vmm/backing.h"
#include "vmm/guest_channel.h"

namespace numavm {

// A guest NUMA cell: a memory region and the vCPUs that belong to it.
struct CellConfig {
  uint64_t memory_bytes = 0;
  std::vector<int> vcpus;
};

struct VmConfig {
  int vcpus = 1;
  uint64_t memory_bytes = 512ull << 20;
  Backing backing = Backing::kMemfd;
  // Empty: one cell with all memory and all vCPUs.
  std::vector<CellConfig> cells;
  std::string payload_args;  // "key=value ..." handed to the payload
  absl::Duration timeout = absl::InfiniteDuration();
  ChannelLimits channel_limits;
  bool echo_console = true;  // print guest console lines to stderr
  // A Linux guest: a terminal whose input goes to COM1 (-1: none).
  int console_input_fd = -1;
  // Entries of each vCPU's dirty ring (KVM_CAP_DIRTY_LOG_RING); 0: no ring.
  // Must be set at creation: KVM only enables the ring before vCPUs exist.
  uint32_t dirty_ring_entries = 0;
};

inline constexpr uint64_t kMinGuestMemory = 16ull << 20;

// Checks vCPU count, memory size and alignment, cells; fills in the default
// cell. Does not look at the host (see CheckHostCanFit).
absl::Status NormalizeVmConfig(VmConfig& config);

// Fails when the host cannot hold `config.memory_bytes` of guest memory.
absl::Status CheckHostCanFit(const VmConfig& config, uint64_t host_total, uint64_t host_available);

}  // namespace numavm

#endif  // NUMAVM_VMM_VM_CONFIG_H_
