// Ground truth for a simulated guest: the share of the workload's accesses
// that hit memory on the accessing vCPU's node, from the model (every page,
// weighted by how often it is accessed) - not from whichever window was
// sampled last. Also `best`: each page on the node whose vCPUs use it most,
// vCPUs where they started; the fewest page moves that reach it; and the
// best with the vCPUs moved too.
// Cost follows the workload's segments and the pages that move, not the
// guest's size.
#ifndef NUMAVM_BALANCER_SIMULATE_GROUND_TRUTH_H_
#define NUMAVM_BALANCER_SIMULATE_GROUND_TRUTH_H_

#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "balancer/replay/model_placement_view.h"
#include "balancer/simulate/best_vcpu_placement.h"
#include "balancer/simulate/workload_model.h"
#include "balancer/topology/topology.h"

namespace numavm {

class GroundTruth {
 public:
  // `start_nodes`: the node each vCPU started on (where `best` keeps it).
  // The view must hold the first-touch placement and count per node.
  GroundTruth(const Topology& topology, const WorkloadModel& workload, std::vector<int> start_nodes,
              const ModelPlacementView& view);

  // Phase `p` is in force from now on.
  void SetPhase(size_t p);
  // A page moved (the view's move listener).
  void OnMove(uint64_t gfn, int from, int to);

  bool has_accesses() const { return total_weight_ > 0; }
  // Access-weighted locality with vCPUs on `vcpu_nodes`.
  double Locality(const std::vector<int>& vcpu_nodes) const;
  // Best locality of the phase in force.
  double Best() const { return best_; }
  // The same with the vCPUs placed for it within the nodes' CPUs
  // (best_vcpu_placement.h): at least Best().
  const VcpuPlacementBest& BestMovingVcpus() const { return best_moving_vcpus_; }
  // Relative speed of each vCPU's memory accesses: 1 when all are local;
  // memory at distance d takes d/10 as long.
  std::vector<double> Speeds(const std::vector<int>& vcpu_nodes) const;
  // Fewest page moves that reach `best` in every phase so far.
  uint64_t min_page_moves() const { return min_page_moves_; }

 private:
  int SegmentOf(uint64_t gfn) const;
  // Cuts the oracle's run holding `at` in two there.
  void Split(uint64_t at);
  // The oracle's pages of `range`, each run to node to(its node).
  void Reassign(GfnRange range, const std::function<int(int)>& to);

  const Topology& topology_;
  const WorkloadModel& workload_;
  const std::vector<int> start_nodes_;
  const ModelPlacementView& view_;
  size_t phase_ = 0;
  // Pages per node of each segment of the phase in force: [segment][node].
  std::vector<std::vector<uint64_t>> on_node_;
  double total_weight_ = 0;  // accesses per second of the phase
  double best_ = 0;
  VcpuPlacementBest best_moving_vcpus_;
  // Where the oracle's pages are: runs [first, end) -> node.
  std::map<uint64_t, std::pair<uint64_t, int>> oracle_;
  uint64_t min_page_moves_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_GROUND_TRUTH_H_
