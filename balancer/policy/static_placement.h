// autonuma-benchmark's HARD_BIND and INVERSE_BIND as a pure function: where
// each vCPU runs and where memory used by a set of vCPUs is bound.
#ifndef NUMAVM_BALANCER_POLICY_STATIC_PLACEMENT_H_
#define NUMAVM_BALANCER_POLICY_STATIC_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

enum class StaticPlacement { kNone, kHard, kInverse };

absl::StatusOr<StaticPlacement> ParseStaticPlacement(absl::string_view name);
absl::string_view StaticPlacementName(StaticPlacement p);

class StaticPlan {
 public:
  // `nodes`: ids of host nodes with CPUs, ascending. vCPUs are spread over
  // them in contiguous blocks (vCPU i -> nodes[i * n / vcpus]).
  StaticPlan(StaticPlacement mode, int vcpus, std::vector<int> nodes);

  StaticPlacement mode() const { return mode_; }
  // Node vCPU `vcpu` is pinned to (both HARD and INVERSE pin vCPUs).
  int VcpuNode(int vcpu) const;
  // Node memory used by the vCPUs in `vcpu_mask` is bound to: under HARD the
  // node most of them run on; under INVERSE the next node after it.
  int MemoryNode(uint64_t vcpu_mask) const;

 private:
  StaticPlacement mode_;
  int vcpus_;
  std::vector<int> nodes_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_STATIC_PLACEMENT_H_
