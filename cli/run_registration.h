// A bundled `numavm run` VM on a control socket, so that `numavm report`
// (and the daemon's operators) see it next to libvirt domains.
#ifndef NUMAVM_CLI_RUN_REGISTRATION_H_
#define NUMAVM_CLI_RUN_REGISTRATION_H_

#include <functional>
#include <memory>
#include <string>

#include "balancer/control/control_socket.h"
#include "balancer/host_placement_view.h"
#include "balancer/report/vm_report.h"
#include "balancer/vm_balancer.h"
#include "vmm/virtual_machine.h"

namespace numavm {

struct RunRegistrationInputs {
  std::string name;  // e.g. "numa02-1234"
  std::string mode;  // the balance mode
  const Topology* topology = nullptr;
  VirtualMachine* vm = nullptr;
  HostPlacementView* view = nullptr;
  const VmBalancer* balancer = nullptr;
  uint64_t backing_page_bytes = 4096;
};

// The VM's report now (memory per node by a move_pages query of its RAM,
// where its vCPU threads last ran, the balancer's counters).
VmReport RunVmReport(const RunRegistrationInputs& in);

// Listens on the runtime directory's run-PID.sock; null (and a note on
// stderr) if that is not possible - the VM runs regardless.
std::unique_ptr<ControlServer> RegisterRunVm(RunRegistrationInputs in);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_REGISTRATION_H_
