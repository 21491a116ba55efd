// Guest-physical and host-virtual addresses are distinct types.
#ifndef NUMAVM_VMM_GUEST_ADDRESS_H_
#define NUMAVM_VMM_GUEST_ADDRESS_H_

#include <cstdint>

namespace numavm {

struct GuestAddress {
  uint64_t value = 0;
  friend bool operator==(GuestAddress, GuestAddress) = default;
  friend auto operator<=>(GuestAddress, GuestAddress) = default;
};

struct HostAddress {
  uintptr_t value = 0;
  friend bool operator==(HostAddress, HostAddress) = default;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_GUEST_ADDRESS_H_
