#include "balancer/replay/model_placement_view.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace numavm {

ModelPlacementView::ModelPlacementView(const Topology& topology, uint64_t pages,
                                       std::vector<int> vcpu_nodes, RateLimiter* limiter)
    : topology_(topology), page_node_(pages, -1), capacity_(topology.node_count()),
      used_(topology.node_count(), 0), vcpu_node_(std::move(vcpu_nodes)), limiter_(limiter) {
  for (int n = 0; n < topology.node_count(); ++n) {
    const uint64_t bytes = topology.nodes[n].memory_bytes;
    capacity_[n] = bytes == 0 ? std::numeric_limits<uint64_t>::max() : bytes / kPageBytes;
  }
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
  vcpu_node_[vcpu] = node;
  ++vcpu_pins_;
  return absl::OkStatus();
}

absl::StatusOr<MigrationOutcome> ModelPlacementView::MovePages(
    const std::vector<std::pair<uint64_t, int>>& moves, absl::Duration now) {
  MigrationOutcome out;
  for (auto [gfn, node] : moves) {
    if (gfn >= page_node_.size() || page_node_[gfn] < 0 || node < 0 ||
        node >= topology_.node_count()) {
      ++out.failed;
      continue;
    }
    if (page_node_[gfn] == node) continue;
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
    page_node_[gfn] = static_cast<int8_t>(node);
    ++out.moved;
    out.bytes_moved += kPageBytes;
    ++page_moves_;
    history_.push_back({gfn, now, from, node});
  }
  return out;
}

uint64_t ModelPlacementView::remigrations(absl::Duration window) const {
  std::unordered_map<uint64_t, absl::Duration> last;
  uint64_t n = 0;
  for (const Move& m : history_) {
    auto it = last.find(m.gfn);
    if (it != last.end() && m.at - it->second <= window) ++n;
    last[m.gfn] = m.at;
  }
  return n;
}

uint64_t ModelPlacementView::bounces(absl::Duration window) const {
  std::unordered_map<uint64_t, std::vector<const Move*>> moves;
  uint64_t n = 0;
  for (const Move& m : history_) {
    for (const Move* earlier : moves[m.gfn]) {
      if (earlier->from == m.to && m.at - earlier->at <= window) {
        ++n;
        break;
      }
    }
    moves[m.gfn].push_back(&m);
  }
  return n;
}

std::vector<uint64_t> ModelPlacementView::pages_per_node() const { return used_; }

}  // namespace numavm
