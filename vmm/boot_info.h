// Fills in the BootInfo page the payload reads at start.
#ifndef NUMAVM_VMM_BOOT_INFO_H_
#define NUMAVM_VMM_BOOT_INFO_H_

#include <cstdint>

#include "absl/status/status.h"
#include "vmm/guest_memory.h"
#include "vmm/vm_config.h"

namespace numavm {

absl::Status WriteBootInfo(const VmConfig& config, GuestMemory& memory, uint32_t tsc_khz);

}  // namespace numavm

#endif  // NUMAVM_VMM_BOOT_INFO_H_
