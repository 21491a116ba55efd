// `numavm simulate`: a closed loop of a workload model (what each vCPU
// touches over time), a sampler model that arms what the scan control asks
// for and reports what the real sampler would, the placement model of a
// topology, and the same VmBalancer and ScanControl that `numavm run` uses,
// unchanged. Deterministic for a given seed; guests up to 1 TiB.
//
// The loop, one scan period at a time, in the order of `numavm run`'s
// sampling thread: the workload runs the period against what is armed; the
// period's samples go to the balancer, which moves pages and vCPUs in the
// model; the outcome sets the next period; the next window is armed
// (unless the vCPUs were idle). Ground truth is taken at the end of every
// period (balancer/simulate/ground_truth.h).
#ifndef NUMAVM_BALANCER_SIMULATE_SIMULATION_H_
#define NUMAVM_BALANCER_SIMULATE_SIMULATION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/sampler_kind.h"
#include "balancer/simulate/sampler_model.h"
#include "balancer/simulate/workload_model.h"
#include "balancer/topology/topology.h"
#include "balancer/vm_balancer.h"

namespace numavm {

// Where guest memory starts: all of it on vCPU 0's node, in order, spilling
// to the nearest nodes when full (`boot`: a booting guest's first touch), or
// each page on the node of the vCPU that uses it (`spread`: a NUMA-aware
// guest that already placed its memory).
enum class SimFirstTouch { kBoot, kSpread };

struct SimulationOptions {
  WorkloadSpec workload;
  int vcpus = 1;
  uint64_t memory_bytes = 1ull << 30;
  absl::Duration seconds = absl::Seconds(60);
  uint64_t seed = 1;
  SimFirstTouch first_touch = SimFirstTouch::kBoot;
  // For this long from the start every vCPU runs on vCPU 0's node and no
  // page may move off it, as under a cpuset of that node's CPUs and memory
  // (the NUMA lab's first touch); then the host lets them go. Memory is
  // first touched there. Times to 90% of the best count only from then on.
  absl::Duration confined;
  // While held (`confined`), the guest only first-touches its memory: the
  // workload's own accesses start kWorkAfterTouch before the release (the
  // NUMA lab widens its cpuset once the resident set has stood still for
  // two seconds), so the probes armed while held fire together when the
  // workload starts - the lab's burst of samples at the widening. False:
  // the workload runs while held.
  bool held_first_touch_only = false;
  // With held_first_touch_only: the first touch goes in address order at
  // a steady pace until the workload starts (vCPU 0 touches all of a
  // numa02 guest's memory in the lab, over a minute under TCG), so the
  // scan arms only what is touched so far and the memory touched last is
  // not in the burst. False: all of it is touched at the start.
  bool held_touch_in_order = false;
  static constexpr absl::Duration kWorkAfterTouch = absl::Seconds(2);
  SamplerKind sampler = SamplerKind::kHint;
  // Runs of neighbouring armed pages touched by one stream
  // (SamplerModel::set_touch_runs), not page by page.
  bool touch_runs = true;
  SamplerCosts costs;
  BalanceMode mode = BalanceMode::kOn;
  uint64_t migrate_bytes_per_second = 256ull << 20;
  // Threads that may share a period's page moves (PageMigrator::set_workers).
  int migrate_threads = PageMigrator::kDefaultWorkers;
  ScanConfig scan;  // adaptive unless mode is off
  BalancerConfig balancer;
  bool measure_cpu = false;  // also measure the balancer's real CPU time
  // Other work on the host: CPUs' worth per node index, steady (none by
  // default; a node's share decides whether the VM fits it:
  // policy/vcpu_plan.h).
  std::vector<double> other_busy;
};

// The largest guest and vCPU count simulate takes.
inline constexpr uint64_t kMaxSimulatedBytes = 1ull << 40;
inline constexpr int kMaxSimulatedVcpus = 256;

struct SimPoint {
  double seconds = 0;
  double locality = 0;  // ground truth
  double best = 0;
  uint64_t pages_migrated = 0;  // so far
};

struct SimPhaseResult {
  std::string label;
  double start_seconds = 0;
  double best = 0;
  // From the phase's start; empty if it never got there.
  std::optional<double> seconds_to_90pct_of_best;
  double end_locality = 0;  // at the phase's end
  // The same for the best with vCPUs moved (best_vcpu_placement.h).
  double best_moving_vcpus = 0;
  std::vector<int> best_vcpu_nodes;
  std::optional<double> seconds_to_90pct_of_best_moving_vcpus;
};

struct SimulationResult {
  std::vector<int> vcpu_start, vcpu_end;
  std::vector<uint64_t> pages_per_node;
  BalancerCounters counters;
  SamplerStats sampler;
  bool has_accesses = false;
  double start_locality = 0;
  double final_locality = 0;
  double best_locality = 0;  // of the last phase
  // The first period end at which ground truth reached 90% of the best of
  // the phase in force; empty if never.
  std::optional<double> seconds_to_90pct_of_best;
  // The same against the best with vCPUs moved within the nodes' CPUs
  // (best_vcpu_placement.h), and that placement; of the last phase.
  double best_moving_vcpus_locality = 0;
  std::vector<int> best_vcpu_nodes;
  std::optional<double> seconds_to_90pct_of_best_moving_vcpus;
  std::vector<SimPhaseResult> phases;
  uint64_t pages_migrated = 0;
  uint64_t min_page_moves = 0;
  uint64_t remigrations = 0;
  uint64_t bounces = 0;
  uint64_t vcpu_moves = 0;
  double stall_seconds = 0;
  double stall_share = 0;  // of busy vCPU time
  double guest_bytes = 0;  // work done, at the model's speed of remote memory
  std::optional<double> guest_bytes_to_90pct_of_best;
  double balancer_cpu_seconds = 0;  // modelled from the work counted
  std::optional<double> balancer_cpu_seconds_measured;
  uint64_t periods = 0;
  uint64_t coarse_restarts = 0;  // ScanControl::coarse_restarts
  std::vector<SimPoint> series;  // at most kSeriesPoints
};

absl::Status ValidateSimulation(const SimulationOptions& options, const Topology& topology);

absl::StatusOr<SimulationResult> Simulate(const SimulationOptions& options,
                                          const Topology& topology);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_SIMULATION_H_
