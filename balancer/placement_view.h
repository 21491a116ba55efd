// Where things are now: the balancer asks this, never the kernel directly,
// so that the same policy code runs on a live VM and against a model.
#ifndef NUMAVM_BALANCER_PLACEMENT_VIEW_H_
#define NUMAVM_BALANCER_PLACEMENT_VIEW_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/actuation/page_migrator.h"

namespace numavm {

class PlacementView {
 public:
  virtual ~PlacementView() = default;
  // Node index (into the topology) of each gfn, -1 if not resident.
  virtual absl::StatusOr<std::vector<int>> PageNodes(const std::vector<uint64_t>& gfns) = 0;
  // Node index each vCPU runs on now, -1 if unknown.
  virtual std::vector<int> VcpuNodes() = 0;
  // CPUs' worth of work other than this VM's own (every thread of its
  // process) on each node index lately (whether the VM would find room on a node:
  // policy/vcpu_plan.h); empty: not known, taken as none.
  virtual std::vector<double> OtherBusyCpus() { return {}; }
  // Runs vCPU `vcpu` on node index `node` from now on (affinity).
  virtual absl::Status PinVcpu(int vcpu, int node) = 0;
  // Moves pages (gfn, node index); returns what happened.
  virtual absl::StatusOr<MigrationOutcome> MovePages(
      const std::vector<std::pair<uint64_t, int>>& moves, absl::Duration now) = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_PLACEMENT_VIEW_H_
