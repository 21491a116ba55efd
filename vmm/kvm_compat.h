// KVM ioctl numbers that <linux/kvm.h> gets wrong under C++ or lacks.
//
// ioctl numbers encode sizeof(the argument struct). For structs that end in
// a flexible array (kvm_cpuid2), g++ computes a different size than C (12
// instead of 8), so the header's macros produce numbers the kernel rejects
// with EINVAL. Spell them with the C layout here. Constants newer than
// Debian's linux-libc-dev also belong here.
#ifndef NUMAVM_VMM_KVM_COMPAT_H_
#define NUMAVM_VMM_KVM_COMPAT_H_

#include <linux/kvm.h>

#include <cstdint>

namespace numavm {

struct KvmCpuid2Header {
  uint32_t nent;
  uint32_t padding;
};
static_assert(sizeof(KvmCpuid2Header) == 8);

inline constexpr unsigned long kKvmGetSupportedCpuid = _IOWR(KVMIO, 0x05, KvmCpuid2Header);
inline constexpr unsigned long kKvmSetCpuid2 = _IOW(KVMIO, 0x90, KvmCpuid2Header);

struct KvmMsrsHeader {
  uint32_t nmsrs;
  uint32_t pad;
};
static_assert(sizeof(KvmMsrsHeader) == 8);
inline constexpr unsigned long kKvmSetMsrs = _IOW(KVMIO, 0x89, KvmMsrsHeader);

// KVM_EXIT_MEMORY_FAULT (Linux 6.8): with KVM_RUN's EFAULT, the guest-physical
// range KVM could not reach, in the exit union as {flags, gpa, size}.
inline constexpr uint32_t kKvmExitMemoryFault = 39;

}  // namespace numavm

#endif  // NUMAVM_VMM_KVM_COMPAT_H_
