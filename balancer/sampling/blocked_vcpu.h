// Which vCPU a hinting fault taken by a KVM worker thread belongs to.
//
// With KVM's in-kernel local APIC (Linux guests), a vCPU whose page fault
// would have to wait - a userfaultfd hinting fault - takes an "async page
// fault": KVM first tries without waiting (userfaultfd then queues
// nothing), puts the vCPU in an artificial halt and lets a kworker fault the
// page in. The userfault then names the kworker, not the vCPU.
//
// WorkerFaultOwner names the vCPU by three rules, in order:
//  1. exactly one vCPU thread is asleep: the halted vCPU is asleep while
//     its fault is pending, a busy guest's others run;
//  2. several are asleep (faults pile up while the handler waits for a CPU;
//     idle vCPUs sleep in HLT too): the one of them in the faulting page's
//     guest NUMA cell, if only one of them is;
//  3. none or several fit and the guest has two or more cells: the page's
//     cell's vCPUs in turn - a NUMA-aware guest allocates a thread's memory
//     on the thread's own node, so a cell's memory is its vCPUs' (the
//     evidence the libvirt path uses for every page, cell_samples.h).
// In the NUMA lab most worker faults came while every vCPU ran (a halted
// vCPU is woken by each interrupt and the guest may run another task),
// so rule 3 decided most of them (docs/linux-guests.md).
#ifndef NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_
#define NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_

#include <sys/types.h>

#include <cstdint>
#include <vector>

namespace numavm {

// The scheduler state of thread `tid` of this process ('R' running, 'S'
// sleeping, 'D' waiting uninterruptibly, ...), or 0 if it has gone.
char ThreadState(pid_t tid);

// The index in `vcpu_tids` of the one thread that sleeps ('S' or 'D');
// if several do, the one of them among `candidates` (empty: no such hint);
// else -1.
int TheOneBlockedVcpu(const std::vector<pid_t>& vcpu_tids, const std::vector<int>& candidates = {});

struct CellVcpus {
  uint64_t end_gfn = 0;  // the cell's pages end here (cells in order from 0)
  std::vector<int> vcpus;
};

struct FaultOwner {
  int vcpu = -1;         // -1: nobody
  bool by_cell = false;  // rule 3: the cell's, not a blocked vCPU
};

class WorkerFaultOwner {
 public:
  explicit WorkerFaultOwner(std::vector<CellVcpus> cells) : cells_(std::move(cells)) {}
  // Who the worker's fault on `gfn` is given to; `vcpu_tids` are the vCPU
  // threads, by index. Called from one thread.
  FaultOwner Of(uint64_t gfn, const std::vector<pid_t>& vcpu_tids);

 private:
  const std::vector<CellVcpus> cells_;
  uint64_t turn_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_BLOCKED_VCPU_H_
