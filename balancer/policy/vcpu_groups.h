// Which vCPUs share memory: a pure function of decayed co-access counts and
// of the links found before.
//
// Co-access: a page sampled from vCPU b right after it was sampled from
// vCPU a (the kernel's numa_group idea: tasks that fault on each other's
// pages belong together), or three neighbouring runs of samples from a
// and b in turn - pages, or whole probe calls (stats/neighbour_runs.h).
// The signal is noisy - pages every vCPU touches now and then (the guest's
// own bookkeeping) link everybody a little, and sampling windows see only
// some hand-overs - so links have hysteresis:
// a and b become linked when at least `join` of the less busy one's samples
// were hand-overs with the other (and at least `min_shared` of them), and
// stay linked until that falls under `leave`. In a group of g vCPUs a pair
// sees only 1/(g-1) of a member's hand-overs, so the pair thresholds scale
// by 2/g, g estimated per vCPU (its hand-overs over its largest pair's);
// and both must hand over at least `join` of their samples overall. Groups
// are the connected components; a guest cell's vCPUs are one group from
// the start.
#ifndef NUMAVM_BALANCER_POLICY_VCPU_GROUPS_H_
#define NUMAVM_BALANCER_POLICY_VCPU_GROUPS_H_

#include <vector>

namespace numavm {

struct GroupingConfig {
  double join = 0.15;
  double leave = 0.05;
  double min_shared = 16;
};

struct GroupingInput {
  std::vector<std::vector<double>> shared;  // [a][b]: co-access, symmetric
  std::vector<double> samples;              // per vCPU, decayed as `shared`
  std::vector<std::vector<int>> cells;      // vCPU lists known to belong together
};

// Updates `linked` ([a][b], symmetric; sized vCPUs x vCPUs) and returns the
// group id per vCPU: the smallest vCPU of its group.
std::vector<int> GroupVcpus(const GroupingInput& in, const GroupingConfig& config,
                            std::vector<std::vector<bool>>& linked);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_VCPU_GROUPS_H_
