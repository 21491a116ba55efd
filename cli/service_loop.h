// What `numavm attach` and `numavm daemon` share: a signal-driven loop and
// the control-socket protocol.
#ifndef NUMAVM_CLI_SERVICE_LOOP_H_
#define NUMAVM_CLI_SERVICE_LOOP_H_

#include <signal.h>

#include <atomic>
#include <string>

#include "absl/time/time.h"
#include "balancer/libvirt/domain_manager.h"
#include "balancer/topology/topology.h"

namespace numavm {

// --balance (and the config's `balance`): off, advise or on; "enforce",
// the old spelling of "on", is still taken from --mode and `mode`.
absl::StatusOr<BalanceMode> ParseDomainBalance(absl::string_view text);

// Blocks SIGINT, SIGTERM and SIGHUP for this thread and the threads it
// starts afterwards (create it first), so that Wait receives them.
class SignalWaiter {
 public:
  SignalWaiter();
  ~SignalWaiter();
  // The signal received, or 0 after `timeout`.
  int Wait(absl::Duration timeout);

 private:
  sigset_t set_, old_;
};

// The control protocol: "report" -> {"process":...,"pid":...,"vms":[...]};
// "detach NAME" / "detach --all" -> "ok" or "error: ...". Sets `*detached_all`
// after "detach --all".
std::string HandleControlRequest(DomainManager& manager, const std::string& process,
                                 const std::string& request, std::atomic<bool>* detached_all);

// The host's topology, or one node with every CPU when there is no NUMA
// sysfs (a note goes to stderr).
Topology HostTopologyOrOneNode(const char* who);

}  // namespace numavm

#endif  // NUMAVM_CLI_SERVICE_LOOP_H_
