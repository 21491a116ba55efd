#include "balancer/vm_balancer.h"

#include <string>
#include <utility>
#include <vector>

namespace numavm {

absl::Status VmBalancer::OnBatch(const AccessBatch& batch, absl::Duration now) {
  std::vector<uint64_t> gfns;
  gfns.reserve(batch.size());
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  absl::StatusOr<std::vector<int>> page_nodes = view_.PageNodes(gfns);
  if (!page_nodes.ok()) return page_nodes.status();
  const std::vector<int> vcpu_nodes = view_.VcpuNodes();

  BalancerCounters delta;
  std::vector<std::pair<uint64_t, int>> moves;
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    ++delta.samples;
    if (s.gfn >= pages_.size()) continue;
    const int page_node = (*page_nodes)[i];
    const int vcpu_node = s.vcpu >= 0 && s.vcpu < static_cast<int>(vcpu_nodes.size())
                              ? vcpu_nodes[s.vcpu]
                              : -1;
    if (page_node < 0) {
      // Not resident now (freed, or unmapped again): nothing to decide.
      ++delta.decisions["page-not-resident"];
      continue;
    }
    if (vcpu_node >= 0) {
      ++delta.attributed;
      if (page_node == vcpu_node) ++delta.local;
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
  for (const auto& [reason, n] : delta.decisions) counters_.decisions[reason] += n;
  return status;
}

BalancerCounters VmBalancer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace numavm
