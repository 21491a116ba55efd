#include "balancer/vm_balancer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "balancer/sampling/thread_cpu.h"

namespace numavm {

absl::StatusOr<PeriodOutcome> VmBalancer::OnBatch(const AccessBatch& batch, absl::Duration now) {
  const absl::Duration cpu_start = ThreadCpuTime();
  BalancerCounters delta;
  absl::Status status = Balance(batch, now, delta);
  delta.cpu_time = ThreadCpuTime() - cpu_start;

  absl::MutexLock lock(&mu_);
  counters_.samples += delta.samples;
  counters_.attributed += delta.attributed;
  counters_.local += delta.local;
  counters_.pages_migrated += delta.pages_migrated;
  counters_.bytes_migrated += delta.bytes_migrated;
  counters_.migration_failures += delta.migration_failures;
  counters_.migrations_deferred += delta.migrations_deferred;
  counters_.vcpu_moves += delta.vcpu_moves;
  counters_.remigrations += delta.remigrations;
  counters_.cpu_time += delta.cpu_time;
  counters_.groups = delta.groups;
  ++counters_.periods;
  // The window: the last kLocalityWindow periods, and none older than
  // kLocalityWindowTime (long adaptive periods would otherwise keep the
  // first, unbalanced minutes in "where locality is now").
  window_.push_back({now, delta.attributed, delta.local});
  while (window_.size() > kLocalityWindow ||
         (window_.size() > 1 && now - window_.front().at > kLocalityWindowTime)) {
    window_.pop_front();
  }
  counters_.window_attributed = counters_.window_local = 0;
  for (const auto& [at, attributed, local] : window_) {
    counters_.window_attributed += attributed;
    counters_.window_local += local;
  }
  if (delta.attributed > 0) {
    counters_.locality_series.emplace_back(absl::ToDoubleSeconds(now), counters_.window_locality());
    if (counters_.locality_series.size() > kSeriesPoints) {
      std::vector<std::pair<double, double>> half;
      for (size_t i = 0; i < counters_.locality_series.size(); i += 2) {
        half.push_back(counters_.locality_series[i]);
      }
      counters_.locality_series = std::move(half);
    }
  }
  counters_.vcpu_nodes.resize(delta.vcpu_nodes.size(), -1);
  for (size_t v = 0; v < delta.vcpu_nodes.size(); ++v) {
    if (delta.vcpu_nodes[v] >= 0) counters_.vcpu_nodes[v] = delta.vcpu_nodes[v];
  }
  counters_.state_bytes = pages_.memory_bytes() + placer_.state_bytes() +
                          sizeof(uint64_t) * (moved_now_.capacity() + moved_before_.capacity());
  for (const auto& [reason, n] : delta.decisions) counters_.decisions[reason] += n;
  if (!status.ok()) return status;
  return PeriodOutcome{delta.attributed, delta.local, delta.pages_migrated, delta.vcpu_moves};
}

std::vector<int> VmBalancer::RecordSharing(const AccessBatch& batch,
                                           const std::vector<int>& page_nodes) {
  const int vcpus = placer_.vcpus();
  std::vector<int> previous_vcpu(batch.size(), -1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    placer_.AddFault(s.vcpu, page_nodes[i]);
    // Who touched the page before: vCPUs that follow each other on pages
    // share memory. The first change of vCPU is not counted: memory that one
    // vCPU initialised and another then uses (first touch) changes hands
    // once; shared memory keeps changing.
    if (s.gfn >= pages_.size() || s.vcpu < 0 || s.vcpu >= vcpus) continue;
    placer_.AddSample(s.vcpu);
    PageState& state = pages_.at(s.gfn);
    if (state.last_vcpu != PageState::kNoNode && state.last_vcpu != s.vcpu &&
        state.last_vcpu < vcpus) {
      if (state.vcpu_switches() > 0) {
        placer_.AddSharing(s.vcpu, state.last_vcpu);
        // Only between groups that exist: before grouping every vCPU is
        // on its own.
        if (placer_.group_of(s.vcpu) != placer_.group_of(state.last_vcpu) &&
            placer_.grouped(s.vcpu) && placer_.grouped(state.last_vcpu)) {
          state.flags |= PageState::kCrossGroup;
        }
      }
      state.add_vcpu_switch();
    }
    if (state.last_vcpu < vcpus) previous_vcpu[i] = state.last_vcpu;
    state.last_vcpu = static_cast<uint8_t>(s.vcpu);
  }
  return previous_vcpu;
}

void VmBalancer::RollRemigrationEpoch(absl::Duration now) {
  constexpr absl::Duration kEpoch = absl::Seconds(10);
  if (now - epoch_start_ < kEpoch) return;
  // A batch more than two epochs after the last roll (long scan periods)
  // rolls twice: marks older than that are forgotten.
  const int rolls = now - epoch_start_ >= 2 * kEpoch ? 2 : 1;
  for (int r = 0; r < rolls; ++r) {
    // Only the pages marked in the last two epochs are touched: the cost
    // follows the (rate-limited) migrations, not the guest's size.
    for (uint64_t g : moved_before_) {
      pages_.at(g).flags &= static_cast<uint8_t>(~PageState::kMovedBefore);
    }
    for (uint64_t g : moved_now_) {
      PageState& p = pages_.at(g);
      p.flags = static_cast<uint8_t>((p.flags & ~PageState::kMovedNow) | PageState::kMovedBefore);
    }
    moved_before_.swap(moved_now_);
    moved_now_.clear();
  }
  epoch_start_ = now;
}

absl::Status VmBalancer::Balance(const AccessBatch& batch, absl::Duration now,
                                 BalancerCounters& delta) {
  std::vector<uint64_t> gfns;
  gfns.reserve(batch.size());
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  absl::StatusOr<std::vector<int>> page_nodes = view_.PageNodes(gfns);
  if (!page_nodes.ok()) return page_nodes.status();
  RollRemigrationEpoch(now);
  const std::vector<int> previous_vcpu = RecordSharing(batch, *page_nodes);
  // Locality is judged where vCPUs ran; the policy decides for where they
  // will run after this period's vCPU placement.
  const std::vector<int> running = view_.VcpuNodes();
  delta.vcpu_nodes = running;
  if (!first_batch_) first_batch_ = now;
  const bool warming_up = now - *first_batch_ < config_.warmup;
  // vCPUs get homes only after the warm-up too: a home given before the
  // groups are known can split a group, and undoing that needs swaps.
  const std::vector<int> vcpu_nodes = placer_.Place(running, now, warming_up, delta);
  const std::vector<VcpuPlacer::GroupSpan> spans = placer_.GroupSpans(vcpu_nodes);

  absl::flat_hash_set<uint64_t> decided;  // a page sampled twice in a batch moves once
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
    PageGroupContext group;
    if (known && !spans[placer_.group_of(s.vcpu)].nodes.empty()) {
      const VcpuPlacer::GroupSpan& span = spans[placer_.group_of(s.vcpu)];
      group.shared_within_group = previous_vcpu[i] >= 0 &&
                                  placer_.group_of(previous_vcpu[i]) == placer_.group_of(s.vcpu);
      group.on_group_nodes =
          static_cast<size_t>(page_node) < span.nodes.size() && span.nodes[page_node];
      group.group_spans_nodes = span.multi_node;
      group.primary_node = span.primary;
    }
    PageVerdict v = OnPageSample(pages_.at(s.gfn), vcpu_node, page_node, true, config_.page,
                                 group);
    if (!v.migrate() || !warming_up) ++delta.decisions[std::string(PageReasonName(v.reason))];
    if (!v.migrate()) continue;
    if (warming_up) {
      ++delta.decisions["warming-up"];
      continue;
    }
    if (!decided.insert(s.gfn).second) continue;
    if (mode_ == BalanceMode::kOn) {
      PageState& moved = pages_.at(s.gfn);
      if (moved.flags & (PageState::kMovedNow | PageState::kMovedBefore)) ++delta.remigrations;
      if (!(moved.flags & PageState::kMovedNow)) {
        moved.flags |= PageState::kMovedNow;
        moved_now_.push_back(s.gfn);
      }
    }
    if (advice_) advice_(s.gfn, page_node, v.to_node, v.reason);
    if (mode_ == BalanceMode::kOn) moves.emplace_back(s.gfn, v.to_node);
  }
  if (moves.empty()) return absl::OkStatus();
  absl::StatusOr<MigrationOutcome> outcome = view_.MovePages(moves, now);
  if (!outcome.ok()) return outcome.status();
  delta.pages_migrated = outcome->moved;
  delta.bytes_migrated = outcome->bytes_moved;
  delta.migration_failures = outcome->failed + outcome->no_memory;
  delta.migrations_deferred = outcome->deferred + outcome->busy;
  return absl::OkStatus();
}

BalancerCounters VmBalancer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace numavm
