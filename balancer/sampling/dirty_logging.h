// Turns KVM dirty logging (KVM_MEM_LOG_DIRTY_PAGES) on or off for guest RAM
// slots; both write samplers need it.
#ifndef NUMAVM_BALANCER_SAMPLING_DIRTY_LOGGING_H_
#define NUMAVM_BALANCER_SAMPLING_DIRTY_LOGGING_H_

#include <vector>

#include "absl/status/status.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

absl::Status SetDirtyLogging(int vm_fd, const std::vector<GuestRamRegion>& ram, bool on);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_DIRTY_LOGGING_H_
