// Whether KVM names the page of a guest access it could not make because
// the VMM's mapping of it is PROT_NONE - what the PROT_NONE sampler
// (balancer/sampling/prot_none_sampler.h) needs. KVM_CAP_MEMORY_FAULT_INFO
// (Linux 6.8) is not enough: until later kernels KVM_RUN's EFAULT for such
// a page came without KVM_EXIT_MEMORY_FAULT (the NUMA lab's 6.12 kernel:
// 10,272 probes armed, 0 named). So this asks KVM itself, once per
// process: a one-page real-mode guest reads a PROT_NONE page, and the
// answer is whether the exit names that page (KVM_EXIT_MEMORY_FAULT with
// its address, or an MMIO exit for it where KVM's instruction emulator
// made the access). The same guest times the fault: the probe's entries
// into KVM_RUN that ended in it, the vCPU's side of a `prot` sample.
#ifndef NUMAVM_VMM_FAULT_PROBE_H_
#define NUMAVM_VMM_FAULT_PROBE_H_

#include "absl/time/time.h"

namespace numavm {

struct ProtNoneFaults {
  bool names_page = false;  // false where /dev/kvm cannot be used, or on any error
  // The median KVM_RUN that ended in the fault (entry, the nested page
  // fault KVM could not resolve, exit to the VMM); zero if not measured.
  absl::Duration exit_round_trip;
};

// Asked once per process; later calls return the first answer.
const ProtNoneFaults& ProbeProtNoneFaults();

inline bool KvmNamesFaultingPages() { return ProbeProtNoneFaults().names_page; }

}  // namespace numavm

#endif  // NUMAVM_VMM_FAULT_PROBE_H_
