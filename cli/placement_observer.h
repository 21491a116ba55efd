// Applies --placement=hard|inverse as the guest starts: pins each vCPU thread
// to its node's CPUs and binds memory ranges the guest declares (LayoutHint)
// to the node the static plan picks, before the guest first touches them.
#ifndef NUMAVM_CLI_PLACEMENT_OBSERVER_H_
#define NUMAVM_CLI_PLACEMENT_OBSERVER_H_

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "balancer/policy/static_placement.h"
#include "balancer/topology/topology.h"
#include "vmm/guest_memory.h"
#include "vmm/guest_observer.h"

namespace numavm {

class PlacementObserver final : public GuestObserver {
 public:
  PlacementObserver(const Topology& topology, StaticPlan plan)
      : topology_(topology), plan_(std::move(plan)) {}

  // The VM's memory exists only once the VM does; set it before it runs.
  void set_memory(const GuestMemory* memory) { memory_ = memory; }

  void OnVcpuThreadStart(int vcpu, pid_t tid) override;
  void OnLayout(const LayoutHint& hint) override;

  // Every layout the guest declared (with or without --placement): which
  // vCPUs use which memory, for the placement-locality figure.
  std::vector<LayoutHint> layouts() const;

  // Problems met while placing (placement never stops the VM).
  std::vector<std::string> warnings() const;
  uint64_t bound_bytes() const;

 private:
  void Warn(std::string message);

  const Topology& topology_;
  const StaticPlan plan_;
  const GuestMemory* memory_ = nullptr;
  mutable absl::Mutex mu_;
  std::vector<std::string> warnings_ ABSL_GUARDED_BY(mu_);
  uint64_t bound_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<LayoutHint> layouts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_CLI_PLACEMENT_OBSERVER_H_
