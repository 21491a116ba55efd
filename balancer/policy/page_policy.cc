#include "balancer/policy/page_policy.h"

namespace numavm {

absl::string_view PageReasonName(PageReason reason) {
  switch (reason) {
    case PageReason::kMigrate:
      return "migrate";
    case PageReason::kFirstSample:
      return "first-sample";
    case PageReason::kNodeChanged:
      return "node-changed";
    case PageReason::kShared:
      return "shared";
    case PageReason::kLocal:
      return "local";
    case PageReason::kDestinationFull:
      return "destination-full";
    case PageReason::kUnattributed:
      return "unattributed";
    case PageReason::kGroupPull:
      return "group-pull";
  }
  return "?";
}

PageVerdict OnPageSample(PageState& state, int accessing_node, int page_node,
                         bool destination_has_room, const PagePolicyConfig& config,
                         const PageGroupContext& group) {
  const bool pull = group.shared_within_group && !group.on_group_nodes && destination_has_room &&
                    !state.has(PageState::kCrossGroup);
  auto pulled = [&] {
    return PageVerdict{PageReason::kGroupPull,
                       group.primary_node >= 0 ? group.primary_node : accessing_node};
  };
  if (accessing_node < 0 || accessing_node >= PageState::kNoNode) {
    return {PageReason::kUnattributed};
  }
  const uint8_t node = static_cast<uint8_t>(accessing_node);
  const uint8_t previous = state.last_node;
  state.last_node = node;
  if (config.two_stage_filter) {
    if (previous != PageState::kNoNode && previous != node) {
      // Consecutive samples from different nodes: noise, or a shared page.
      // Hold it for a while either way; repeated changes hold it longer.
      state.add_node_change(config.shared_hold);
      if (pull) return pulled();
      return {PageReason::kNodeChanged};
    }
    if (state.node_changes() > 0) {
      state.same_node_again();
      if (pull) return pulled();
      return {PageReason::kShared};
    }
    if (page_node == accessing_node) return {PageReason::kLocal};
    if (previous == PageState::kNoNode) return {PageReason::kFirstSample};
    if (state.shared_by_vcpus()) {
      if (pull) return pulled();
      return {PageReason::kShared};
    }
  } else if (page_node == accessing_node) {
    return {PageReason::kLocal};
  }
  if (!destination_has_room) return {PageReason::kDestinationFull};
  return {PageReason::kMigrate, accessing_node};
}

}  // namespace numavm
