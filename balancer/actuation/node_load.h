// How busy each node's CPUs were lately with work other than the VM's own:
// /proc/stat's per-CPU lines, less the CPU time of the VM's threads (every
// thread of its process) on the node each last ran on. Whether a VM that
// fits a node would find room there (policy/vcpu_plan.h; a libvirt
// domain's home, policy/home_node.h): without it, VMs whose memory sits on
// one node would all gather there however busy it is.
#ifndef NUMAVM_BALANCER_ACTUATION_NODE_LOAD_H_
#define NUMAVM_BALANCER_ACTUATION_NODE_LOAD_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "balancer/actuation/proc_stat.h"
#include "balancer/topology/topology.h"

namespace numavm {

// One of the VM's own CPU consumers (a thread of its process): what it
// used so far and where it ran last. `key` names it from one sample to the next.
struct OwnCpuUse {
  std::string key;
  absl::Duration cpu_time;  // so far
  int last_cpu = -1;
};

class NodeLoad {
 public:
  using Reader = std::function<std::string()>;

  // `reader` gives /proc/stat's text (default: this host's).
  explicit NodeLoad(const Topology& topology, Reader reader = nullptr);

  // CPUs' worth of work other than `own` on each node index since the last
  // call, averaged with the calls before (each older one counts half as
  // much); empty on the first call or when /proc/stat cannot be read. A
  // consumer is counted on the node of its last CPU, from its second
  // sample on.
  std::vector<double> Sample(const std::vector<OwnCpuUse>& own);

  // The same, read at most once every `interval` (of `now`, any monotonic
  // clock): a call sooner returns the last figures and reads nothing, not
  // even `own`. A reading costs /proc/stat and two files a thread - 0.3 ms
  // of host CPU for a 12-thread process on the development machine, some
  // milliseconds in the NUMA lab's nested guest, where one every scan
  // period took a third of the scan's 1% budget (docs/numa-lab.md).
  // Each older reading counts half as much, so `interval` is also how
  // fast old work is forgotten.
  std::vector<double> SampleEvery(absl::Duration interval, absl::Duration now,
                                  const std::function<std::vector<OwnCpuUse>()>& own);

 private:
  const Topology& topology_;
  const std::vector<int> node_index_of_cpu_;
  Reader reader_;
  std::optional<std::vector<CpuTicks>> last_;
  std::map<std::string, absl::Duration> last_own_;  // by key, as of the last call
  std::vector<double> average_;
  std::optional<absl::Duration> last_read_;  // SampleEvery's last reading
};

// Every thread of process `pid` (numavm run's own, or a domain's QEMU
// process: its vCPU threads and the rest, all of them the VM's), keyed
// "pid/tid"; empty if it is gone.
std::vector<OwnCpuUse> ProcessCpuUse(pid_t pid, const std::string& proc_root = "/proc");

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_NODE_LOAD_H_
