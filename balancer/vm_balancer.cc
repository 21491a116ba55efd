#include "balancer/vm_balancer.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "balancer/policy/vcpu_groups.h"
#include "balancer/policy/vcpu_placement.h"
#include "balancer/sampling/thread_cpu.h"

namespace numavm {

absl::Status VmBalancer::OnBatch(const AccessBatch& batch, absl::Duration now) {
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
  counters_.state_bytes = pages_.memory_bytes() +
                          sizeof(double) * faults_.vcpus() * (topology_.node_count() + faults_.vcpus());
  for (const auto& [reason, n] : delta.decisions) counters_.decisions[reason] += n;
  return status;
}

std::vector<int> VmBalancer::RecordSharing(const AccessBatch& batch,
                                           const std::vector<int>& page_nodes) {
  const int vcpus = faults_.vcpus();
  std::vector<int> previous_vcpu(batch.size(), -1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const AccessSample& s = batch[i];
    faults_.Add(s.vcpu, page_nodes[i]);
    // Who touched the page before: vCPUs that follow each other on pages
    // share memory. The first change of vCPU is not counted: memory that one
    // vCPU initialised and another then uses (first touch) changes hands
    // once; shared memory keeps changing.
    if (s.gfn >= pages_.size() || s.vcpu < 0 || s.vcpu >= vcpus) continue;
    group_samples_[s.vcpu] += 1;
    PageState& state = pages_.at(s.gfn);
    if (state.last_vcpu != PageState::kNoNode && state.last_vcpu != s.vcpu &&
        state.last_vcpu < vcpus) {
      if (state.vcpu_switches() > 0) {
        shared_[s.vcpu][state.last_vcpu] += 1;
        shared_[state.last_vcpu][s.vcpu] += 1;
        // Only between groups that exist: before grouping every vCPU is
        // on its own.
        if (group_[s.vcpu] != group_[state.last_vcpu] && group_size_[group_[s.vcpu]] > 1 &&
            group_size_[group_[state.last_vcpu]] > 1) {
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

absl::Status VmBalancer::Balance(const AccessBatch& batch, absl::Duration now,
                                 BalancerCounters& delta) {
  std::vector<uint64_t> gfns;
  gfns.reserve(batch.size());
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  absl::StatusOr<std::vector<int>> page_nodes = view_.PageNodes(gfns);
  if (!page_nodes.ok()) return page_nodes.status();
  const int vcpus = faults_.vcpus();
  if (now - epoch_start_ >= absl::Seconds(10)) {
    // A new re-migration epoch: this epoch's marks become the previous one's.
    for (uint64_t g = 0; g < pages_.size(); ++g) {
      PageState& p = pages_.at(g);
      const bool now_set = p.flags & PageState::kMovedNow;
      p.flags &= static_cast<uint8_t>(~(PageState::kMovedNow | PageState::kMovedBefore));
      if (now_set) p.flags |= PageState::kMovedBefore;
    }
    epoch_start_ = now;
  }
  const std::vector<int> previous_vcpu = RecordSharing(batch, *page_nodes);
  // Locality is judged where vCPUs ran; the policy decides for where they
  // will run after this period's vCPU placement.
  const std::vector<int> running = view_.VcpuNodes();
  delta.vcpu_nodes = running;
  if (!first_batch_) first_batch_ = now;
  const bool warming_up = now - *first_batch_ < config_.warmup;
  // vCPUs get homes only after the warm-up too: a home given before the
  // groups are known can split a group, and undoing that needs swaps.
  const std::vector<int> vcpu_nodes = PlaceVcpus(running, now, warming_up, delta);
  // The nodes each multi-vCPU group runs on, and the one of them holding
  // most of the group's memory (where shared pages are pulled to).
  std::vector<std::vector<bool>> group_nodes(vcpus);
  std::vector<int> group_primary(vcpus, -1);
  for (int v = 0; v < vcpus; ++v) {
    const int g = group_[v];
    if (group_size_[g] < 2) continue;
    group_nodes[g].resize(topology_.node_count(), false);
    if (vcpu_nodes[v] >= 0 && vcpu_nodes[v] < topology_.node_count()) {
      group_nodes[g][vcpu_nodes[v]] = true;
    }
  }
  for (int g = 0; g < vcpus; ++g) {
    if (group_nodes[g].empty()) continue;
    std::vector<double> faults(topology_.node_count(), 0.0);
    for (int v = 0; v < vcpus; ++v) {
      if (group_[v] != g) continue;
      for (int n = 0; n < topology_.node_count(); ++n) faults[n] += faults_.of(v)[n];
    }
    for (int n = 0; n < topology_.node_count(); ++n) {
      if (group_nodes[g][n] && (group_primary[g] < 0 || faults[n] > faults[group_primary[g]])) {
        group_primary[g] = n;
      }
    }
  }

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
    if (known && !group_nodes[group_[s.vcpu]].empty()) {
      const std::vector<bool>& nodes = group_nodes[group_[s.vcpu]];
      group.shared_within_group =
          previous_vcpu[i] >= 0 && group_[previous_vcpu[i]] == group_[s.vcpu];
      group.on_group_nodes = nodes[page_node];
      group.group_spans_nodes = std::count(nodes.begin(), nodes.end(), true) > 1;
      group.primary_node = group_primary[group_[s.vcpu]];
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
      moved.flags |= PageState::kMovedNow;
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

bool VmBalancer::MoveVcpu(int v, int node, std::vector<int>& effective, std::vector<int>& load,
                          BalancerCounters& delta) {
  // Pinning a vCPU where it runs gives it a home; only a change of node is a move.
  const bool moves = effective[v] != node;
  ++delta.decisions[moves ? "vcpu-move" : "vcpu-home"];
  if (mode_ != BalanceMode::kOn) return false;
  if (!view_.PinVcpu(v, node).ok()) {
    ++delta.decisions["vcpu-pin-failed"];
    return false;
  }
  if (home_[v] >= 0 && home_[v] < topology_.node_count()) --load[home_[v]];
  home_[v] = node;
  ++load[node];
  effective[v] = node;
  if (moves) ++delta.vcpu_moves;
  return true;
}

std::vector<int> VmBalancer::PlaceVcpus(const std::vector<int>& running, absl::Duration now,
                                        bool warming_up, BalancerCounters& delta) {
  const int vcpus = faults_.vcpus();
  const int nodes = topology_.node_count();
  std::vector<int> effective(vcpus, -1);
  // This VM's vCPUs with a home on each node. vCPUs without one run where
  // the host scheduler puts them and count nowhere until they get one.
  std::vector<int> load(nodes, 0);
  for (int v = 0; v < vcpus; ++v) {
    effective[v] = home_[v] >= 0                             ? home_[v]
                   : v < static_cast<int>(running.size()) ? running[v]
                                                            : -1;
    if (home_[v] >= 0 && home_[v] < nodes) ++load[home_[v]];
  }

  GroupingInput grouping{shared_, group_samples_, config_.cells};
  group_ = GroupVcpus(grouping, config_.grouping, linked_);
  group_size_.assign(vcpus, 0);
  for (int v = 0; v < vcpus; ++v) ++group_size_[group_[v]];
  const std::vector<int>& group = group_;
  std::vector<std::vector<int>> members(vcpus);
  for (int v = 0; v < vcpus; ++v) members[group[v]].push_back(v);
  size_t biggest = 1;
  for (const auto& m : members) {
    biggest = std::max(biggest, m.size());
    if (!m.empty()) ++delta.groups;
  }
  // How many of this VM's vCPUs a node takes: its CPUs, and no more than a
  // fair share unless one group needs more - private vCPUs stay spread (and
  // their memory comes to them) instead of piling onto the node that
  // happened to touch the memory first.
  int cpu_nodes = 0;
  for (const NumaNode& n : topology_.nodes) cpu_nodes += n.cpus.empty() ? 0 : 1;
  if (cpu_nodes <= 1 || warming_up) {
    // One node with CPUs: nothing to place. Warming up: not yet.
    DecayStats(now);
    return effective;
  }
  const int fair = cpu_nodes == 0 ? vcpus : (vcpus + cpu_nodes - 1) / cpu_nodes;
  std::vector<int> cap(nodes);
  for (int n = 0; n < nodes; ++n) {
    cap[n] = std::min(static_cast<int>(topology_.nodes[n].cpus.size()),
                      std::max(fair, static_cast<int>(biggest)));
  }

  std::vector<int> order;
  for (int g = 0; g < vcpus; ++g) {
    if (members[g].size() > 1) order.push_back(g);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return members[a].size() > members[b].size(); });
  for (int g : order) {
    const std::vector<int>& m = members[g];
    GroupDemand demand{static_cast<int>(m.size()), std::vector<double>(nodes, 0.0)};
    std::vector<int> free = cap;
    for (int n = 0; n < nodes; ++n) free[n] -= load[n];
    for (int v : m) {
      for (int n = 0; n < nodes; ++n) demand.faults_per_node[n] += faults_.of(v)[n];
      if (home_[v] >= 0 && home_[v] < nodes) ++free[home_[v]];
    }
    const std::vector<int> target = PlaceGroups(topology_, {demand}, free)[0];
    if (target.empty()) {
      ++delta.decisions["group-does-not-fit"];
      continue;
    }
    // Hysteresis: keep a placement on as few nodes that scores nearly as well.
    std::vector<int> now_on;
    bool all_known = true;
    for (int v : m) {
      if (effective[v] < 0 || effective[v] >= nodes) {
        all_known = false;
      } else if (std::find(now_on.begin(), now_on.end(), effective[v]) == now_on.end()) {
        now_on.push_back(effective[v]);
      }
    }
    double score_now = 0, score_target = 0;
    for (int n : now_on) score_now += NodeScore(topology_, demand.faults_per_node, n);
    for (int n : target) score_target += NodeScore(topology_, demand.faults_per_node, n);
    if (all_known && now_on.size() <= target.size() && score_now * 1.1 >= score_target) {
      continue;
    }
    std::vector<int> room(nodes, 0);
    for (int n : target) room[n] = free[n];
    for (int v : m) {  // members already on a target node stay
      if (effective[v] >= 0 && effective[v] < nodes && room[effective[v]] > 0) {
        --room[effective[v]];
      }
    }
    for (int v : m) {
      const int at = effective[v];
      if (at >= 0 && at < nodes && std::find(target.begin(), target.end(), at) != target.end()) {
        continue;
      }
      int best = -1;
      for (int n : target) {
        if (room[n] > 0 && (best < 0 || NodeScore(topology_, demand.faults_per_node, n) >
                                            NodeScore(topology_, demand.faults_per_node, best))) {
          best = n;
        }
      }
      if (best < 0) break;
      --room[best];
      MoveVcpu(v, best, effective, load, delta);
    }
  }

  for (int v = 0; v < vcpus; ++v) {
    if (members[group[v]].size() > 1) continue;
    const int current = effective[v];
    const int preferred = PreferredNode(topology_, faults_.of(v), current);
    if (preferred < 0) continue;  // no evidence yet
    if (home_[v] >= 0) {
      if (preferred == current) continue;
      if (load[preferred] >= cap[preferred]) {
        ++delta.decisions["vcpu-node-full"];
        continue;
      }
      MoveVcpu(v, preferred, effective, load, delta);
      continue;
    }
    // No home yet: the preferred node if it has room, else the best node
    // that has (below). Left unpinned, the host scheduler would move the vCPU
    // between nodes and its pages would look shared.
    int target = load[preferred] < cap[preferred] ? preferred : -1;
    // Else where it runs now, if there is room: moving it only closer to
    // memory that will come to it anyway would cost a move for nothing.
    if (target < 0 && current >= 0 && current < nodes && !topology_.nodes[current].cpus.empty() &&
        load[current] < cap[current]) {
      target = current;
    }
    for (int n = 0; n < nodes && target < 0; ++n) {
      if (topology_.nodes[n].cpus.empty() || load[n] >= cap[n]) continue;
      int best = n;
      for (int k = n + 1; k < nodes; ++k) {
        if (!topology_.nodes[k].cpus.empty() && load[k] < cap[k] &&
            NodeScore(topology_, faults_.of(v), k) > NodeScore(topology_, faults_.of(v), best)) {
          best = k;
        }
      }
      target = best;
    }
    if (target < 0) {
      ++delta.decisions["vcpu-node-full"];
      continue;
    }
    MoveVcpu(v, target, effective, load, delta);
  }
  DecayStats(now);
  return effective;
}

void VmBalancer::DecayStats(absl::Duration now) {
  // Forget by elapsed time: half of it every fault_half_life.
  const absl::Duration elapsed = last_batch_ ? now - *last_batch_ : absl::ZeroDuration();
  last_batch_ = now;
  const double keep =
      elapsed <= absl::ZeroDuration() || config_.fault_half_life <= absl::ZeroDuration()
          ? 0.5
          : std::exp2(-absl::FDivDuration(elapsed, config_.fault_half_life));
  faults_.Decay(keep);
  for (auto& row : shared_) {
    for (double& s : row) s *= keep;
  }
  for (double& s : group_samples_) s *= keep;
}

BalancerCounters VmBalancer::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

}  // namespace numavm
