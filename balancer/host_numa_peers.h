// Other NUMA balancers on the host that act on the same VMs: the kernel's
// automatic NUMA balancing (kernel.numa_balancing) and numad. numavm does
// not stop them; it says so, once, where a user looks (attach and daemon
// logs, `numavm report` notes), because two balancers moving one VM's
// memory can undo each other's work.
#ifndef NUMAVM_BALANCER_HOST_NUMA_PEERS_H_
#define NUMAVM_BALANCER_HOST_NUMA_PEERS_H_

#include <optional>
#include <string>
#include <vector>

namespace numavm {

struct HostNumaPeers {
  // /proc/sys/kernel/numa_balancing (0 off; 1 NUMA balancing; 2 memory
  // tiering; 3 both); absent if the kernel has none.
  std::optional<int> kernel_numa_balancing;
  std::vector<int> numad_pids;  // processes whose comm is "numad"
};

// Reads `proc` (the proc filesystem's mount point).
HostNumaPeers DetectHostNumaPeers(const std::string& proc = "/proc");

// kernel.numa_balancing alone (HostNumaPeers::kernel_numa_balancing).
std::optional<int> ReadKernelNumaBalancing(const std::string& proc = "/proc");

// One line per peer that is active, naming it and what to do about it.
std::vector<std::string> HostNumaPeerWarnings(const HostNumaPeers& peers);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_HOST_NUMA_PEERS_H_
