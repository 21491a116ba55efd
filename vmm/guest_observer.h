// Hooks through which the VMM tells its owner (placement, balancer) what the
// guest is doing. Called on vCPU threads; the vCPU waits until they return.
#ifndef NUMAVM_VMM_GUEST_OBSERVER_H_
#define NUMAVM_VMM_GUEST_OBSERVER_H_

#include <sys/types.h>

#include <cstdint>

#include "vmm/guest_address.h"

namespace numavm {

struct LayoutHint {
  GuestAddress start;
  uint64_t bytes = 0;
  uint64_t vcpu_mask = 0;  // vCPUs that use this memory
};

class GuestObserver {
 public:
  virtual ~GuestObserver() = default;
  // On the vCPU's own thread, before it runs guest code.
  virtual void OnVcpuThreadStart(int vcpu, pid_t tid) {}
  // The guest declared which vCPUs use a range (validated to lie in RAM).
  virtual void OnLayout(const LayoutHint& hint) {}
};

}  // namespace numavm

#endif  // NUMAVM_VMM_GUEST_OBSERVER_H_
