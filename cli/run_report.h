// The per-VM summary `numavm run` prints at exit, as a table or JSON.
#ifndef NUMAVM_CLI_RUN_REPORT_H_
#define NUMAVM_CLI_RUN_REPORT_H_

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "balancer/actuation/page_nodes.h"
#include "balancer/report/vm_report.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/vm_balancer.h"
#include "cli/run_options.h"
#include "vmm/virtual_machine.h"

namespace numavm {

struct SamplingSummary {
  std::string sampler;  // hint, ring, dirtylog, off
  uint64_t window_bytes = 0;
  absl::Duration period;
  SamplerStats stats;
  absl::Duration cpu_time;      // of the sampling thread
  uint64_t idle_periods = 0;    // periods skipped because the VM was idle
  absl::Duration final_period;  // where the adaptive period ended
  absl::Duration period_max;
  uint64_t period_changes = 0;
  // Regions mode (no --scan-window): the scan rate at the end and its
  // ceiling, bytes per second; the measured fault round trip; the share of
  // the vCPUs' busy time the sampling faults cost.
  double rate_bytes_per_second = 0;
  double ceiling_bytes_per_second = 0;
  absl::Duration fault_cost;
  absl::Duration host_cost_per_probe;  // the sampling thread's time per probe
  absl::Duration host_cost_per_call;   // ... per arming call (smoothed)
  uint64_t arm_calls = 0;              // over the run
  // The run's mean host time per arming call, as the stall budget charges
  // it (arming, collecting, deciding); zero before the first call.
  absl::Duration host_cost_per_call_mean() const {
    return arm_calls > 0 ? (host_arm + host_collect + host_decide) / static_cast<double>(arm_calls)
                         : absl::ZeroDuration();
  }
  // The sampling thread's CPU by what it did (SamplingLoop::HostSplit).
  absl::Duration host_arm, host_collect, host_decide, host_migrate;
  absl::Duration host_decide_view;  // of decide, in the placement view's calls
  double stall_share = 0;
  double stall_budget = 0;
  int probes_per_region = 0;
  uint64_t probe_run_pages = 1;  // neighbouring pages per arming call
  uint64_t revisits = 0;         // regions visited again at once (ScanControl)
  uint64_t regions_passed = 0;   // regions the sweep passed over: no memory there
  uint64_t coarse_restarts = 0;  // sweeps restarted coarse (ScanControl)
  std::string error;             // why sampling stopped early, if it did
};

struct BalanceSummary {
  std::string mode;
  BalancerCounters counters;
  std::string error;  // why balancing stopped early, if it did
  // How pages move: "protected" (each run of a batch made inaccessible
  // first, actuation/protected_moves.h), "unmapped" (through the alias
  // process, actuation/unmapped_moves.h) or "mapped" (each where the guest
  // maps it).
  std::string page_moves = "mapped";
  uint64_t move_windows = 0;     // batches moved protected
  uint64_t vcpu_move_waits = 0;  // vCPU entries retried after touching one
};

// Where the declared memory was at one moment of the run.
struct PlacementPoint {
  double seconds = 0;
  std::optional<double> locality;
  uint64_t guest_bytes = 0;  // processed by all vCPUs so far
  std::map<int, uint64_t> bytes_per_node;
  std::vector<int> vcpu_nodes;  // host node id each vCPU ran on, -1 unknown
};

struct RunSummary {
  std::string payload;
  const RunOptions* options = nullptr;
  RunOutcome outcome;
  int exit_code = 0;
  std::vector<int> host_nodes;      // the host's node ids
  std::optional<NodeUsage> memory;  // absent if the query failed
  std::string memory_error;
  std::vector<std::string> notes;  // placement notes and warnings
  // Declared per-vCPU memory on its vCPUs' nodes (cli/placement_locality.h).
  std::optional<double> placement_locality;
  std::vector<PlacementPoint> placement_series;  // --placement-interval
  SamplingSummary sampling;
  BalanceSummary balance;
  // The VM as `numavm report` shows it (the same object as in report and
  // attach JSON); absent if the VM never started.
  std::optional<VmReport> vm;
};

nlohmann::json SummaryToJson(const RunSummary& summary);
std::string SummaryToTable(const RunSummary& summary);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_REPORT_H_
