#include "balancer/vm_balancer.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "base/thread_cpu.h"

namespace numavm {

absl::StatusOr<PeriodOutcome> VmBalancer::OnBatch(const AccessBatch& batch, absl::Duration now) {
  const absl::Duration cpu_start = ThreadCpuTime();
  BalancerCounters delta;
  uint64_t wanted = 0, changing = 0;
  absl::Status status = Balance(batch, now, delta, wanted, changing);
  delta.cpu_time = ThreadCpuTime() - cpu_start;

  absl::MutexLock lock(&mu_);
  counters_.samples += delta.samples;
  counters_.attributed += delta.attributed;
  counters_.local += delta.local;
  counters_.pages_migrated += delta.pages_migrated;
  counters_.bytes_migrated += delta.bytes_migrated;
  counters_.pages_migrated_unmapped += delta.pages_migrated_unmapped;
  counters_.migration_failures += delta.migration_failures;
  counters_.migrations_deferred += delta.migrations_deferred;
  counters_.vcpu_moves += delta.vcpu_moves;
  counters_.remigrations += delta.remigrations;
  counters_.regions_moved += delta.regions_moved;
  counters_.cpu_time += delta.cpu_time;
  counters_.move_cpu_time += delta.move_cpu_time;
  counters_.view_cpu_time += delta.view_cpu_time;
  counters_.groups = delta.groups;
  if (!delta.vcpu_group_of.empty()) counters_.vcpu_group_of = delta.vcpu_group_of;
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
    counters_.locality_series.push_back({absl::ToDoubleSeconds(now), counters_.window_locality(),
                                         counters_.pages_migrated, counters_.groups});
    if (counters_.locality_series.size() > kSeriesPoints) {
      std::vector<BalanceSeriesPoint> half;
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
  counters_.state_bytes = pages_.memory_bytes() + regions_.memory_bytes() + placer_.state_bytes() +
                          sizeof(uint64_t) * (moved_now_.capacity() + moved_before_.capacity());
  counters_.decisions += delta.decisions;
  counters_.neighbours = neighbours_.counts();
  counters_.brackets_borne_out = regions_.brackets_borne_out();
  counters_.brackets_contradicted = regions_.brackets_contradicted();
  counters_.brackets_trusted = regions_.brackets_trusted();
  if (!status.ok()) return status;
  PeriodOutcome outcome{
      delta.attributed, delta.local, delta.pages_migrated, delta.vcpu_moves,
      wanted,           changing,    delta.move_cpu_time,  std::exchange(revisit_, {})};
  outcome.view_cpu_time = delta.view_cpu_time;
  outcome.dissents = std::exchange(dissents_, 0);
  outcome.followed = std::exchange(followed_, 0);
  return outcome;
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
    const int last = state.last_vcpu();
    if (last != PageState::kNoVcpu && last != s.vcpu && last < vcpus) {
      if (state.vcpu_switches() > 0) {
        placer_.AddSharing(s.vcpu, last);
        // Only between groups that exist: before grouping every vCPU is
        // on its own.
        if (placer_.group_of(s.vcpu) != placer_.group_of(last) && placer_.grouped(s.vcpu) &&
            placer_.grouped(last)) {
          state.set(PageState::kCrossGroup);
        }
      }
      state.add_vcpu_switch();
      state.set_run(0);
    } else if (last == s.vcpu) {
      // A run of samples from one vCPU: the evidence of sharing ages.
      if (state.run() == 2) {
        state.same_vcpu_again();
        state.set_run(0);
      } else {
        state.set_run(state.run() + 1);
      }
    }
    if (last != PageState::kNoVcpu && last < vcpus) {
      previous_vcpu[i] = last;
      if (placer_.group_of(last) == placer_.group_of(s.vcpu)) state.clear(PageState::kCrossGroup);
    }
    state.set_last_vcpu(s.vcpu);
  }
  neighbours_.Add(batch, vcpus, pages_.size(),
                  [this](int a, int b, uint64_t n) { placer_.AddSharing(a, b, n); });
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
    for (uint64_t g : moved_before_) pages_.at(g).clear(PageState::kMovedBefore);
    for (uint64_t g : moved_now_) {
      PageState& p = pages_.at(g);
      p.clear(PageState::kMovedNow);
      p.set(PageState::kMovedBefore);
    }
    moved_before_.swap(moved_now_);
    moved_now_.clear();
  }
  epoch_start_ = now;
}

absl::Duration VmBalancer::SweepEstimate() const {
  if (visits_per_second_ <= 0) return absl::ZeroDuration();
  // At most ten minutes: evidence older than that is stale whatever the pace.
  return std::min(absl::Minutes(10),
                  absl::Seconds(static_cast<double>(regions_.regions()) / visits_per_second_));
}

bool VmBalancer::MarkMoved(uint64_t gfn) {
  PageState& moved = pages_.at(gfn);
  const bool again = moved.has(PageState::kMovedNow) || moved.has(PageState::kMovedBefore);
  if (!moved.has(PageState::kMovedNow)) {
    moved.set(PageState::kMovedNow);
    moved_now_.push_back(gfn);
  }
  return again;
}

absl::Status VmBalancer::Balance(const AccessBatch& batch, absl::Duration now,
                                 BalancerCounters& delta, uint64_t& wanted, uint64_t& changing) {
  std::vector<uint64_t> gfns;
  gfns.reserve(batch.size());
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  const absl::Duration query_start = ThreadCpuTime();
  absl::StatusOr<std::vector<int>> page_nodes = view_.PageNodes(gfns);
  delta.view_cpu_time += ThreadCpuTime() - query_start;
  if (!page_nodes.ok()) return page_nodes.status();
  RollRemigrationEpoch(now);
  const std::vector<int> previous_vcpu = RecordSharing(batch, *page_nodes);
  // Locality is judged where vCPUs ran; the policy decides for where they
  // will run after this period's vCPU placement.
  const absl::Duration running_start = ThreadCpuTime();
  const std::vector<int> running = view_.VcpuNodes();
  delta.view_cpu_time += ThreadCpuTime() - running_start;
  delta.vcpu_nodes = running;
  if (!first_batch_) first_batch_ = now;
  const bool warming_up = now - *first_batch_ < config_.warmup;
  // vCPUs get homes only after the warm-up too: a home given before the
  // groups are known can split a group, and undoing that needs swaps.
  const std::vector<int> vcpu_nodes =
      placer_.Place(running, now, warming_up, delta, SweepEstimate());
  const std::vector<VcpuPlacer::GroupSpan> spans = placer_.GroupSpans(vcpu_nodes);
  if (config_.regions && placer_.joined()) regions_.ForgetDisagreement();
  const bool acting = mode_ == BalanceMode::kOn && !warming_up;

  // Every sample through the page policy (its history must stay whole);
  // each region's samples together make its visit.
  std::vector<PageVerdict> verdicts(batch.size());
  std::vector<bool> decided(batch.size(), false);
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    ++delta.samples;
    if (s.gfn >= pages_.size()) {
      decided[i] = true;
      continue;
    }
    const int page_node = (*page_nodes)[i];
    const bool known = s.vcpu >= 0 && s.vcpu < static_cast<int>(vcpu_nodes.size());
    const int vcpu_node = known ? vcpu_nodes[s.vcpu] : -1;
    const int ran_on = known && s.vcpu < static_cast<int>(running.size()) ? running[s.vcpu] : -1;
    if (page_node < 0) {
      // Not resident now (freed, or unmapped again): nothing to decide.
      ++delta.decisions[Decision::kPageNotResident];
      decided[i] = true;
      continue;
    }
    if (ran_on >= 0) {
      ++delta.attributed;
      if (page_node == ran_on) ++delta.local;
    }
    // Room on the destination is the migrator's to find out (ENOMEM comes
    // back as a failure); the policy assumes room until told otherwise.
    PageGroupContext group;
    const VcpuPlacer::GroupSpan* span = nullptr;
    if (known && !spans[placer_.group_of(s.vcpu)].nodes.empty()) {
      span = &spans[placer_.group_of(s.vcpu)];
      group.shared_within_group =
          previous_vcpu[i] >= 0 && placer_.group_of(previous_vcpu[i]) == placer_.group_of(s.vcpu);
      group.on_group_nodes =
          static_cast<size_t>(page_node) < span->nodes.size() && span->nodes[page_node];
      group.group_spans_nodes = span->multi_node;
      group.primary_node = span->primary;
    }
    PageState& page = pages_.at(s.gfn);
    verdicts[i] = OnPageSample(page, vcpu_node, page_node, true, config_.page, group);
    if (!config_.regions || vcpu_node < 0) continue;
    // Where this vCPU wants its memory: its node; for a group over several
    // nodes, its primary node - and any node with as many of the group's
    // vCPUs will do.
    int target = vcpu_node;
    // The vCPU whose own memory this is (a private page of a vCPU in no
    // group): its regions follow it (RegionBalancer::Follow).
    int owner = known && !placer_.grouped(s.vcpu) && !page.shared_by_vcpus() ? s.vcpu : -1;
    uint64_t acceptable = vcpu_node < 64 ? 1ull << vcpu_node : 0;
    // The group whose memory this is, where the group is on one node: its
    // regions follow the group (RegionBalancer::FollowGroup).
    const int group_id = span != nullptr && !span->multi_node ? placer_.group_of(s.vcpu) : -1;
    if (span != nullptr && span->multi_node && span->primary >= 0) {
      target = span->primary;
      owner = -1;
      acceptable = 0;
      for (size_t n = 0; n < span->busiest.size() && n < 64; ++n) {
        if (span->busiest[n]) acceptable |= 1ull << n;
      }
    }
    regions_.AddSample(s.gfn, target, acceptable, page_node, !page.shared_by_vcpus(), owner,
                       group_id);
  }
  // The regions' verdicts; a region that decides takes its samples with it.
  const RegionBalancer::Outcome regions =
      regions_.Decide(mode_ == BalanceMode::kOn, warming_up, delta.decisions, advice_);
  wanted += regions.wanted;
  changing += regions.changing;
  if (mode_ == BalanceMode::kOn && !warming_up) revisit_ = regions.revisit;
  dissents_ = regions.dissents;
  // A vCPU given a home on another node takes the regions that are its
  // alone with it.
  if (config_.regions && !warming_up) {
    followed_home_.resize(vcpu_nodes.size(), -1);
    bool first_home = false;
    for (size_t v = 0; v < vcpu_nodes.size(); ++v) {
      const int home = placer_.home(static_cast<int>(v));
      if (home < 0 || home == followed_home_[v]) continue;
      first_home |= followed_home_[v] < 0;
      followed_home_[v] = home;
      uint64_t retargeted = 0;
      const uint64_t followed =
          regions_.Follow(static_cast<int>(v), home, mode_ == BalanceMode::kOn, delta.decisions,
                          advice_, &retargeted);
      wanted += followed;
      followed_ += followed + retargeted;
    }
    // A group that moved takes its memory with it: a group on one node to
    // its new node; a group let go over several nodes (from one node, as
    // the NUMA lab's cpuset holds a VM first) to its primary node, but for
    // the memory on a node with as many of its vCPUs as any. Also when
    // its nodes are first seen after the warm-up: a group found in the
    // warm-up (the lab's burst of first samples, 2 s before its cpuset
    // widens) settled its memory where it ran then, and may run elsewhere
    // by now; memory already on its nodes stays.
    followed_group_nodes_.resize(spans.size(), 0);
    for (size_t g = 0; g < spans.size(); ++g) {
      const VcpuPlacer::GroupSpan& span = spans[g];
      if (span.nodes.empty() || span.primary < 0 || span.primary >= 64) continue;
      uint64_t nodes = 1ull << span.primary;
      for (size_t n = 0; span.multi_node && n < span.busiest.size() && n < 64; ++n) {
        if (span.busiest[n]) nodes |= 1ull << n;
      }
      if (nodes == followed_group_nodes_[g]) continue;
      followed_group_nodes_[g] = nodes;
      uint64_t retargeted = 0;
      const uint64_t followed =
          regions_.FollowGroup(static_cast<int>(g), span.primary, nodes, mode_ == BalanceMode::kOn,
                               delta.decisions, advice_, &retargeted);
      wanted += followed;
      followed_ += followed + retargeted;
    }
    // Until a vCPU has a home its samples want its memory where it ran
    // (numa01 in the NUMA lab: vCPUs 2-3 ran on node 0 until they got
    // homes on node 1, and what they wrote then voted for node 0), so the
    // rest's single votes may be stale once it has one. (Votes cast by a
    // vCPU that had a home wanted that home; a later move of it is not
    // aged this way: with it, 4node-large groups ended at 91% of local
    // accesses instead of 99%.)
    if (first_home) regions_.AgeVotes();
  }
  // The scan's pace, for how long evidence must last.
  if (now > last_batch_) {
    const double rate = regions.visits / absl::ToDoubleSeconds(now - last_batch_);
    visits_per_second_ = visits_per_second_ == 0 ? rate : 0.8 * visits_per_second_ + 0.2 * rate;
  }
  last_batch_ = now;

  absl::flat_hash_set<uint64_t> asked;  // a page sampled twice in a batch moves once
  std::vector<std::pair<uint64_t, int>> moves;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (decided[i]) continue;
    const AccessSample& s = batch[i];
    if (regions_.Decided(s.gfn)) continue;
    const PageVerdict& v = verdicts[i];
    if (!v.migrate() || !warming_up) {
      ++delta.decisions[static_cast<Decision>(static_cast<uint8_t>(v.reason))];
    }
    if (!v.migrate()) continue;
    ++wanted;
    if (warming_up) {
      ++delta.decisions[Decision::kWarmingUp];
      continue;
    }
    if (!asked.insert(s.gfn).second) continue;
    if (mode_ == BalanceMode::kOn && MarkMoved(s.gfn)) ++delta.remigrations;
    if (advice_) {
      advice_(s.gfn, 1, (*page_nodes)[i], v.to_node, PageReasonName(v.reason));
    }
    if (mode_ == BalanceMode::kOn) moves.emplace_back(s.gfn, v.to_node);
  }
  auto add = [&delta](const MigrationOutcome& o) {
    delta.pages_migrated += o.moved;
    delta.bytes_migrated += o.bytes_moved;
    delta.pages_migrated_unmapped += o.moved_unmapped;
    delta.migration_failures += o.failed + o.no_memory;
    delta.migrations_deferred += o.deferred + o.busy;
  };
  const absl::Duration moves_start = ThreadCpuTime();
  if (!moves.empty()) {
    absl::StatusOr<MigrationOutcome> outcome = view_.MovePages(moves, now);
    if (!outcome.ok()) return outcome.status();
    add(*outcome);
  }
  if (acting) {
    absl::StatusOr<RegionMovesOutcome> drained = regions_.Drain(view_, now, [&](uint64_t gfn) {
      if (MarkMoved(gfn)) ++delta.remigrations;
    });
    if (!drained.ok()) return drained.status();
    add(drained->pages);
    delta.regions_moved += drained->regions_done;
  }
  delta.move_cpu_time = ThreadCpuTime() - moves_start;
  return absl::OkStatus();
}

BalancerCounters VmBalancer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

uint64_t VmBalancer::pages_migrated() const {
  absl::MutexLock lock(&mu_);
  return counters_.pages_migrated;
}

}  // namespace numavm
