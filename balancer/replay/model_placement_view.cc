#include "balancer/replay/model_placement_view.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "balancer/actuation/page_migrator.h"

namespace numavm {

ModelPlacementView::ModelPlacementView(const Topology& topology, uint64_t pages,
                                       std::vector<int> vcpu_nodes, RateLimiter* limiter)
    : topology_(topology),
      page_node_(pages, -1),
      last_move_(pages, 0),
      left_node_(pages, -1),
      capacity_(topology.node_count()),
      used_(topology.node_count(), 0),
      vcpu_node_(std::move(vcpu_nodes)),
      limiter_(limiter) {
  for (int n = 0; n < topology.node_count(); ++n) {
    const uint64_t bytes = topology.nodes[n].memory_bytes;
    capacity_[n] = bytes == 0 ? std::numeric_limits<uint64_t>::max() : bytes / kPageBytes;
  }
}

void ModelPlacementView::EnableNodeCounts() {
  const uint64_t chunks = (page_node_.size() + kChunkPages - 1) / kChunkPages;
  chunk_counts_.assign(chunks * topology_.node_count(), 0);
  for (uint64_t g = 0; g < page_node_.size(); ++g) {
    if (page_node_[g] >= 0) Count(g, page_node_[g], 1);
  }
}

void ModelPlacementView::Count(uint64_t gfn, int node, int delta) {
  if (chunk_counts_.empty()) return;
  uint16_t& c = chunk_counts_[gfn / kChunkPages * topology_.node_count() + node];
  c = static_cast<uint16_t>(c + delta);
}

std::vector<uint64_t> ModelPlacementView::NodeCounts(GfnRange range) const {
  const int nodes = topology_.node_count();
  std::vector<uint64_t> out(nodes, 0);
  const uint64_t end = std::min<uint64_t>(range.end(), page_node_.size());
  uint64_t g = range.first;
  while (g < end) {
    if (g % kChunkPages == 0 && g + kChunkPages <= end && !chunk_counts_.empty()) {
      const uint16_t* c = &chunk_counts_[g / kChunkPages * nodes];
      for (int n = 0; n < nodes; ++n) out[n] += c[n];
      g += kChunkPages;
    } else {
      if (page_node_[g] >= 0) ++out[page_node_[g]];
      ++g;
    }
  }
  return out;
}

void ModelPlacementView::Touch(uint64_t gfn, int node) {
  if (gfn >= page_node_.size() || page_node_[gfn] >= 0 || node < 0 ||
      node >= topology_.node_count()) {
    return;
  }
  int best = -1;
  for (int n = 0; n < topology_.node_count(); ++n) {
    if (used_[n] >= capacity_[n]) continue;
    if (best < 0 || topology_.distance[node][n] < topology_.distance[node][best]) best = n;
  }
  if (best < 0) return;  // every node is full: the page stays not resident
  page_node_[gfn] = static_cast<int8_t>(best);
  ++used_[best];
  Count(gfn, best, 1);
}

void ModelPlacementView::TouchRange(GfnRange range, int node) {
  const uint64_t end = std::min<uint64_t>(range.end(), page_node_.size());
  for (uint64_t g = range.first; g < end; ++g) Touch(g, node);
}

absl::StatusOr<std::vector<int>> ModelPlacementView::PageNodes(const std::vector<uint64_t>& gfns) {
  std::vector<int> out;
  out.reserve(gfns.size());
  for (uint64_t g : gfns) out.push_back(g < page_node_.size() ? page_node_[g] : -1);
  return out;
}

absl::Status ModelPlacementView::PinVcpu(int vcpu, int node) {
  if (vcpu < 0 || vcpu >= static_cast<int>(vcpu_node_.size()) || node < 0 ||
      node >= topology_.node_count() || topology_.nodes[node].cpus.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot pin vCPU ", vcpu, " to node ", node));
  }
  if (confined_ >= 0 && node != confined_) {
    // sched_setaffinity(2) with no CPU of the task's cpuset: EINVAL.
    return absl::InvalidArgumentError(absl::StrCat("cannot pin vCPU ", vcpu, " to node ", node,
                                                   ": confined to node ", confined_));
  }
  vcpu_node_[vcpu] = node;
  ++vcpu_pins_;
  return absl::OkStatus();
}

absl::StatusOr<MigrationOutcome> ModelPlacementView::MovePages(
    const std::vector<std::pair<uint64_t, int>>& moves, absl::Duration now) {
  MigrationOutcome out;
  const int64_t second = std::clamp<int64_t>(absl::ToInt64Seconds(now), 0, 65534);
  const int64_t window = absl::ToInt64Seconds(kRemigrationWindow);
  // A node outside the confinement is refused, as move_pages(2) refuses a
  // node outside the cpuset's mems (EACCES).
  auto valid = [this](uint64_t gfn, int node) {
    return gfn < page_node_.size() && page_node_[gfn] >= 0 && node >= 0 &&
           node < topology_.node_count() && (confined_ < 0 || node == confined_);
  };
  // As PageMigrator: each of the call's threads (one, or a share of
  // them, WorkersFor) starts a batch while the period's time lasts, and
  // then moves it whole; the period took as long as its busiest thread.
  const bool timed = move_time_ > absl::ZeroDuration();
  std::vector<absl::Duration> clocks;
  size_t worker = 0;
  if (timed) {
    if (now != period_) {
      period_ = now;
      spent_ = absl::ZeroDuration();
    }
    size_t movable = 0;
    for (auto [gfn, node] : moves) movable += valid(gfn, node) && page_node_[gfn] != node;
    const size_t batches = (movable + PageMigrator::kBatchPages - 1) / PageMigrator::kBatchPages;
    const int workers = WorkersFor(
        batches, move_time_ * static_cast<double>(PageMigrator::kBatchPages),
        std::min(PageMigrator::kSoloTime, move_time_per_period_) - spent_, move_workers_);
    clocks.assign(static_cast<size_t>(workers), spent_);
  }
  size_t in_batch = 0;  // pages of this call's current batch
  for (auto [gfn, node] : moves) {
    if (!valid(gfn, node)) {
      ++out.failed;
      continue;
    }
    if (page_node_[gfn] == node) continue;
    if (timed) {
      if (in_batch == 0) {
        worker =
            static_cast<size_t>(std::min_element(clocks.begin(), clocks.end()) - clocks.begin());
        if (clocks[worker] >= move_time_per_period_) {
          ++out.deferred;
          continue;
        }
      }
      in_batch = (in_batch + 1) % PageMigrator::kBatchPages;
      clocks[worker] += move_time_;
      spent_ = std::max(spent_, clocks[worker]);
    }
    if (limiter_ != nullptr) {
      if (uint64_t granted = limiter_->Take(kPageBytes, now); granted < kPageBytes) {
        limiter_->GiveBack(granted);
        ++out.deferred;
        continue;
      }
    }
    if (used_[node] >= capacity_[node]) {
      ++out.no_memory;
      if (limiter_ != nullptr) limiter_->GiveBack(kPageBytes);
      continue;
    }
    const int from = page_node_[gfn];
    --used_[from];
    ++used_[node];
    Count(gfn, from, -1);
    Count(gfn, node, 1);
    page_node_[gfn] = static_cast<int8_t>(node);
    if (last_move_[gfn] != 0 && second - (last_move_[gfn] - 1) <= window) {
      ++remigrations_;
      if (left_node_[gfn] == node) ++bounces_;
    }
    last_move_[gfn] = static_cast<uint16_t>(second + 1);
    left_node_[gfn] = static_cast<int8_t>(from);
    ++out.moved;
    out.bytes_moved += kPageBytes;
    ++page_moves_;
    if (listener_) listener_(gfn, from, node);
  }
  return out;
}

}  // namespace numavm
