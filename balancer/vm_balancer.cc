#include "balancer/vm_balancer.h"

#include <string>
#include <utility>
#include <vector>

#include "balancer/policy/vcpu_placement.h"

namespace numavm {

absl::Status VmBalancer::OnBatch(const AccessBatch& batch, absl::Duration now) {
  std::vector<uint64_t> gfns;
  gfns.reserve(batch.size());
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  absl::StatusOr<std::vector<int>> page_nodes = view_.PageNodes(gfns);
  if (!page_nodes.ok()) return page_nodes.status();
  BalancerCounters delta;
  for (size_t i = 0; i < batch.size(); ++i) {
    faults_.Add(batch[i].vcpu, (*page_nodes)[i]);
  }
  // Locality is judged where vCPUs ran; the policy decides for where they
  // will run after this period's vCPU placement.
  const std::vector<int> running = view_.VcpuNodes();
  const std::vector<int> vcpu_nodes = PlaceVcpus(running, delta);

  std::vector<std::pair<uint64_t, int>> moves;
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    ++delta.samples;
    if (s.gfn >= pages_.size()) continue;
    const int page_node = (*page_nodes)[i];
    const bool known = s.vcpu >= 0 && s.vcpu < static_cast<int>(vcpu_nodes.size());
    const int vcpu_node = known ? vcpu_nodes[s.vcpu] : -1;
    const int ran_on = known && s.vcpu < static_cast<int>(running.size()) ? running[s.vcpu] : -1;
    if (page_node < 0) {
      // Not resident now (freed, or unmapped again): nothing to decide.
      ++delta.decisions["page-not-resident"];
      continue;
    }
    if (ran_on >= 0) {
      ++delta.attributed;
      if (page_node == ran_on) ++delta.local;
    }
    // Room on the destination is the migrator's to find out (ENOMEM comes
    // back as a failure); the policy assumes room until told otherwise.
    PageVerdict v = OnPageSample(pages_.at(s.gfn), vcpu_node, page_node, true, config_);
    ++delta.decisions[std::string(PageReasonName(v.reason))];
    if (!v.migrate()) continue;
    if (advice_) advice_(s.gfn, page_node, v.to_node, v.reason);
    if (mode_ == BalanceMode::kOn) moves.emplace_back(s.gfn, v.to_node);
  }
  absl::Status status;
  if (!moves.empty()) {
    absl::StatusOr<MigrationOutcome> outcome = view_.MovePages(moves, now);
    if (outcome.ok()) {
      delta.pages_migrated = outcome->moved;
      delta.bytes_migrated = outcome->bytes_moved;
      delta.migration_failures = outcome->failed + outcome->no_memory;
      delta.migrations_deferred = outcome->deferred + outcome->busy;
    } else {
      status = outcome.status();
    }
  }
  absl::MutexLock lock(&mu_);
  counters_.samples += delta.samples;
  counters_.attributed += delta.attributed;
  counters_.local += delta.local;
  counters_.pages_migrated += delta.pages_migrated;
  counters_.bytes_migrated += delta.bytes_migrated;
  counters_.migration_failures += delta.migration_failures;
  counters_.migrations_deferred += delta.migrations_deferred;
  counters_.vcpu_moves += delta.vcpu_moves;
  for (const auto& [reason, n] : delta.decisions) counters_.decisions[reason] += n;
  return status;
}

std::vector<int> VmBalancer::PlaceVcpus(const std::vector<int>& running,
                                        BalancerCounters& delta) {
  std::vector<int> effective(faults_.vcpus(), -1);
  std::vector<int> load(topology_.node_count(), 0);  // vCPUs on each node
  for (int v = 0; v < faults_.vcpus(); ++v) {
    effective[v] = home_[v] >= 0                             ? home_[v]
                   : v < static_cast<int>(running.size()) ? running[v]
                                                            : -1;
    if (effective[v] >= 0 && effective[v] < topology_.node_count()) ++load[effective[v]];
  }
  for (int v = 0; v < faults_.vcpus(); ++v) {
    const int current = effective[v];
    const int preferred = PreferredNode(topology_, faults_.of(v), current);
    if (preferred < 0 || preferred == current) continue;
    if (load[preferred] >= static_cast<int>(topology_.nodes[preferred].cpus.size())) {
      ++delta.decisions["vcpu-node-full"];
      continue;
    }
    ++delta.decisions["vcpu-move"];
    if (mode_ != BalanceMode::kOn) continue;
    if (!view_.PinVcpu(v, preferred).ok()) {
      ++delta.decisions["vcpu-pin-failed"];
      continue;
    }
    if (current >= 0 && current < topology_.node_count()) --load[current];
    home_[v] = preferred;
    ++load[preferred];
    effective[v] = preferred;
    ++delta.vcpu_moves;
  }
  faults_.Decay(0.5);
  return effective;
}

BalancerCounters VmBalancer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace numavm
