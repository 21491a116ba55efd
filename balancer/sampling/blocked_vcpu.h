// Which vCPU a fault taken by a KVM worker thread belongs to.
//
// With KVM's in-kernel local APIC (Linux guests), a vCPU whose page fault
// would have to wait - a userfaultfd hinting fault - takes an "async page
// fault": KVM first tries without waiting (userfaultfd then queues
// nothing), puts the vCPU in an artificial halt and lets a kworker fault the
// page in. The userfault then names the kworker, not the vCPU. The vCPU
// sleeps until the page is there (an async-PF halt skips halt polling), so
// while its fault is pending it is blocked; a busy guest's other vCPUs run.
// If exactly one vCPU thread is asleep, the fault is its; if none or several
// are (idle vCPUs sleep in HLT as well), nobody is named.
#ifndef NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_
#define NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_

#include <sys/types.h>

#include <vector>

namespace numavm {

// The scheduler state of thread `tid` of this process ('R' running, 'S'
// sleeping, 'D' waiting uninterruptibly, ...), or 0 if it has gone.
char ThreadState(pid_t tid);

// The index in `vcpu_tids` of the one thread that sleeps ('S' or 'D'), or
// -1 if none or several do.
int TheOneBlockedVcpu(const std::vector<pid_t>& vcpu_tids);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_
