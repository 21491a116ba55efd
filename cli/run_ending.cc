#include "cli/run_ending.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/report/vm_report.h"
#include "base/size.h"
#include "cli/page_moves_setup.h"
#include "cli/placement_locality.h"

namespace numavm {

void EndSampling(SamplingLoop& sampling, const AccessSampler& sampler, const RunOptions& options,
                 RunSummary& summary) {
  sampling.Stop();
  SamplingSummary& s = summary.sampling;
  s.stats = sampler.stats();
  s.cpu_time = sampling.cpu_time() + s.stats.helper_cpu_time;
  s.idle_periods = sampling.idle_periods();
  s.final_period = sampling.period();
  s.period_changes = sampling.period_changes();
  s.period_max = sampling.period_max();
  s.rate_bytes_per_second = sampling.scan_rate();
  s.ceiling_bytes_per_second = sampling.scan_rate_ceiling();
  s.fault_cost = sampler.FaultCost();
  s.host_cost_per_probe = sampling.host_cost_per_probe();
  s.host_cost_per_call = sampling.host_cost_per_call();
  s.arm_calls = sampling.arm_calls();
  const SamplingLoop::HostSplit split = sampling.host_split();
  s.host_arm = split.arm;
  s.host_collect = split.collect;
  s.host_decide = split.decide;
  s.host_migrate = split.migrate;
  s.host_decide_view = split.view;
  s.stall_share = sampling.stall_share();
  s.stall_budget = options.sampling.rate.stall_budget;
  // As the scan armed them (one huge page a region on 2 MiB backing),
  // else as configured.
  s.probes_per_region = sampling.probes_per_region() > 0 ? sampling.probes_per_region()
                                                         : options.sampling.rate.probes_per_region;
  s.probe_run_pages = sampling.probe_run_pages();
  s.revisits = sampling.revisits();
  s.regions_passed = sampling.regions_passed();
  s.coarse_restarts = sampling.coarse_restarts();
  if (!sampling.status().ok()) s.error = std::string(sampling.status().message());
}

void SummarizeBalance(const VmBalancer& balancer, const HostPlacementView& view, VirtualMachine& vm,
                      const MigrationChurn* churn, RunSummary& summary) {
  summary.balance.counters = balancer.counters();
  summary.balance.counters.move_times = view.move_times();
  summary.balance.page_moves = view.moves_unmapped()    ? "unmapped"
                               : view.moves_protected() ? "protected"
                                                        : "mapped";
  summary.balance.move_windows = view.protected_windows();
  summary.balance.vcpu_move_waits = vm.move_fence().retries();
  if (churn != nullptr) {
    summary.notes.push_back(absl::StrCat("--migrate-churn: ", churn->moved(), " page migrations (",
                                         churn->moved_unmapped(), " unmapped first), ",
                                         churn->failed(), " failed"));
    summary.balance.counters.pages_migrated += churn->moved();
    summary.balance.counters.pages_migrated_unmapped += churn->moved_unmapped();
    summary.balance.counters.move_times += churn->move_times();
    summary.balance.move_windows += churn->protected_windows();
  }
  for (std::string& note : PageMovesEndNotes(view, vm.move_fence(), summary.balance.move_windows)) {
    summary.notes.push_back(std::move(note));
  }
}

void SummarizePlacement(VirtualMachine& vm, const Topology& topology,
                        const PlacementObserver& placement, const RunOptions& options,
                        const RunRegistrationInputs& registration, RunSummary& summary) {
  const uint64_t page_bytes = BackingAlignment(options.vm.backing);
  std::vector<HostRange> ranges;
  for (const GuestRegion& r : vm.memory().regions()) {
    ranges.push_back(HostRange{reinterpret_cast<uintptr_t>(r.host()), r.bytes});
    if (r.backing.fd.valid()) {
      // Pages the hinting-fault scanner left unmapped still live somewhere.
      (void)MapResidentPages(ranges.back(), page_bytes);
    }
  }
  // Where the balancer last saw the vCPUs; without a balancer (no sampler),
  // where the placement series saw them last.
  std::vector<int> vcpu_node_ids;
  for (int n : summary.balance.counters.vcpu_nodes) {
    vcpu_node_ids.push_back(n >= 0 && n < topology.node_count() ? topology.nodes[n].id : -1);
  }
  if (vcpu_node_ids.empty() && !summary.placement_series.empty()) {
    vcpu_node_ids = summary.placement_series.back().vcpu_nodes;
  }
  summary.placement_locality =
      LayoutPlacementLocality(placement.layouts(), vm.memory(), vcpu_node_ids);
  absl::StatusOr<NodeUsage> usage = QueryPageNodes(0, ranges, page_bytes);
  if (usage.ok()) {
    summary.memory = *usage;
  } else {
    summary.memory_error = std::string(usage.status().message());
  }
  summary.vm = RunVmReport(registration);
  summary.vm->status = std::string(RunEndName(summary.outcome.end));
  if (summary.vm->vcpus_per_node.empty()) {  // the vCPU threads are gone: where they were
    for (int id : vcpu_node_ids) {
      if (id >= 0) ++summary.vm->vcpus_per_node[id];
    }
    summary.vm->placement_locality =
        PlacementLocality(summary.vm->vcpus_per_node, summary.vm->memory_per_node);
  }
  if (options.placement != StaticPlacement::kNone) {
    summary.notes.push_back(absl::StrCat("--placement=", StaticPlacementName(options.placement),
                                         ": ", FormatSize(placement.bound_bytes()),
                                         " of guest memory bound by the payload's layout"));
  }
  for (std::string& w : placement.warnings()) summary.notes.push_back(std::move(w));
}

}  // namespace numavm
