// Whether KVM names the page of a guest access it could not make because
// the VMM's mapping of it is PROT_NONE - what the PROT_NONE sampler
// (balancer/sampling/prot_none_sampler.h) needs. KVM_CAP_MEMORY_FAULT_INFO
// (Linux 6.8) is not enough: until later kernels KVM_RUN's EFAULT for such
// a page came without KVM_EXIT_MEMORY_FAULT (the NUMA lab's 6.12 kernel:
// 10,272 probes armed, 0 named). So this asks KVM itself, once per
// process: a one-page real-mode guest reads a PROT_NONE page, and the
// answer is whether the exit names that page (KVM_EXIT_MEMORY_FAULT with
// its address, or an MMIO exit for it where KVM's instruction emulator
// made the access).
#ifndef NUMAVM_VMM_FAULT_PROBE_H_
#define NUMAVM_VMM_FAULT_PROBE_H_

namespace numavm {

// False where /dev/kvm cannot be used, or on any error of the probe.
bool KvmNamesFaultingPages();

}  // namespace numavm

#endif  // NUMAVM_VMM_FAULT_PROBE_H_
