// What `numavm run`'s report says once its VM has stopped: the sampler's
// and the balancer's figures over the run, where guest memory and the
// vCPUs ended up, and the VM's report as `numavm report` showed it while
// it ran. run_command.cc calls these in that order.
#ifndef NUMAVM_CLI_RUN_ENDING_H_
#define NUMAVM_CLI_RUN_ENDING_H_

#include "balancer/host_placement_view.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/sampling_loop.h"
#include "balancer/topology/topology.h"
#include "balancer/vm_balancer.h"
#include "cli/migration_churn.h"
#include "cli/placement_observer.h"
#include "cli/run_options.h"
#include "cli/run_registration.h"
#include "cli/run_report.h"
#include "vmm/virtual_machine.h"

namespace numavm {

// Stops the sampling loop and records its figures (rate, costs, host time
// split, stall share, its error if it stopped early).
void EndSampling(SamplingLoop& sampling, const AccessSampler& sampler, const RunOptions& options,
                 RunSummary& summary);

// The balancer's counters and how pages moved, the churn's moves counted
// in (`churn` may be null).
void SummarizeBalance(const VmBalancer& balancer, const HostPlacementView& view, VirtualMachine& vm,
                      const MigrationChurn* churn, RunSummary& summary);

// Where guest memory is now (a move_pages query of all of it), the
// payload-declared layout's placement locality against where the vCPUs
// last ran, and the VM's own report.
void SummarizePlacement(VirtualMachine& vm, const Topology& topology,
                        const PlacementObserver& placement, const RunOptions& options,
                        const RunRegistrationInputs& registration, RunSummary& summary);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_ENDING_H_
