// Where each vCPU's memory accesses went, as the host kernel's own NUMA
// balancing counted them. With kernel.numa_balancing on, the kernel keeps
// per thread its NUMA hinting faults by the node of the memory they touched
// - a decaying count (halved every scan period, so it tells of the last
// few), shown in the `numa_faults` lines of /proc/PID/task/TID/sched
// (CONFIG_SCHED_DEBUG, as Debian builds its kernels). For a process numavm
// does not own - a libvirt domain's QEMU - it is the one per-vCPU access
// signal these kernels give (docs/libvirt.md), and it exists only while the
// kernel's balancing runs: when it is off the counts stand still.
#ifndef NUMAVM_BALANCER_LIBVIRT_KERNEL_NUMA_FAULTS_H_
#define NUMAVM_BALANCER_LIBVIRT_KERNEL_NUMA_FAULTS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace numavm {

// Host node id -> faults.
using NodeFaults = std::map<int, uint64_t>;

// A thread's faults by node (task_private + task_shared) from the text of
// its sched file; nodes without faults are left out, so a thread the
// kernel never counted (or a kernel without the lines) gives an empty map.
NodeFaults ParseNumaFaults(absl::string_view sched);

// ParseNumaFaults of each vCPU's thread (`threads`: vCPU index -> thread
// id) of process `pid`; a thread that ended is left out.
std::map<int, NodeFaults> ReadVcpuNumaFaults(pid_t pid, const std::map<int, pid_t>& threads,
                                             const std::string& proc_root = "/proc");

// The share of the vCPUs' faults that were on the node each vCPU last ran
// on (`vcpu_node`: vCPU index -> host node id); nullopt when no vCPU with
// a node has a fault counted.
std::optional<double> KernelFaultLocality(const std::map<int, NodeFaults>& faults,
                                          const std::map<int, int>& vcpu_node);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_KERNEL_NUMA_FAULTS_H_
