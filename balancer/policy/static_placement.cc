#include "balancer/policy/static_placement.h"

#include <map>

#include "absl/strings/str_cat.h"

namespace numavm {

absl::StatusOr<StaticPlacement> ParseStaticPlacement(absl::string_view name) {
  if (name == "none") return StaticPlacement::kNone;
  if (name == "hard") return StaticPlacement::kHard;
  if (name == "inverse") return StaticPlacement::kInverse;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown placement '", name, "' (expected none, hard or inverse)"));
}

absl::string_view StaticPlacementName(StaticPlacement p) {
  switch (p) {
    case StaticPlacement::kNone:
      return "none";
    case StaticPlacement::kHard:
      return "hard";
    case StaticPlacement::kInverse:
      return "inverse";
  }
  return "?";
}

StaticPlan::StaticPlan(StaticPlacement mode, int vcpus, std::vector<int> nodes)
    : mode_(mode), vcpus_(vcpus < 1 ? 1 : vcpus), nodes_(std::move(nodes)) {
  if (nodes_.empty()) nodes_.push_back(0);
}

int StaticPlan::VcpuNode(int vcpu) const {
  const int n = static_cast<int>(nodes_.size());
  return nodes_[static_cast<size_t>(vcpu) * n / vcpus_ % n];
}

int StaticPlan::MemoryNode(uint64_t vcpu_mask) const {
  std::map<int, int> votes;  // node index -> vCPUs of the mask on it
  const int n = static_cast<int>(nodes_.size());
  for (int v = 0; v < vcpus_ && v < 64; ++v) {
    if ((vcpu_mask >> v) & 1) ++votes[v * n / vcpus_ % n];
  }
  int best = 0, best_votes = -1;
  for (auto [index, count] : votes) {
    if (count > best_votes) {
      best = index;
      best_votes = count;
    }
  }
  if (mode_ == StaticPlacement::kInverse) best = (best + 1) % n;
  return nodes_[best];
}

}  // namespace numavm
