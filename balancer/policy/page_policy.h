// The per-page migrate decision: a pure function of the page's state, where
// the sample came from, where the page is, and whether the destination has
// room. Every verdict carries its reason.
//
// Two lessons of AutoNUMA are built in:
//  - one sample is noise: a page moves only after two consecutive samples
//    from the same node (the two-stage filter);
//  - pages used from several nodes ping-pong: a page whose consecutive
//    samples come from different nodes is held as shared for the next
//    `shared_hold` samples (more after repeated changes: the count ages
//    down one per repeat, stats/page_state.h) and never moved meanwhile.
// Both rest on comparing a sample with the previous one; turning the filter
// off (for experiments only) turns both off.
// Shared pages and vCPU groups (policy/vcpu_groups.h): a page that keeps
// changing vCPUs (PageState::shared_by_vcpus, which ages the same way) is
// shared even when its samples come from one node; it moves only when its vCPUs are one group and
// the page is on none of the group's nodes: then to the group's primary node
// (kGroupPull; the accessing vCPU's node if there is none), where it stays. A page two groups share
// (PageState::kCrossGroup) is pulled by neither. Until the group is known it stays put - no
// move now that the group's placement would undo (the kernel's numa_group
// rules, simplified).
#ifndef NUMAVM_BALANCER_POLICY_PAGE_POLICY_H_
#define NUMAVM_BALANCER_POLICY_PAGE_POLICY_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "balancer/stats/page_state.h"

namespace numavm {

enum class PageReason : uint8_t {
  kMigrate,          // two consecutive samples from a node the page is not on
  kFirstSample,      // nothing to compare with yet
  kNodeChanged,      // the previous sample came from another node
  kShared,           // held: used from several nodes recently
  kLocal,            // already on the accessing node
  kDestinationFull,  // the accessing node has no room
  kUnattributed,     // no vCPU (hence no node) for the sample
  kGroupPull,        // shared within a vCPU group, but off the group's nodes
};

absl::string_view PageReasonName(PageReason reason);

struct PageVerdict {
  PageReason reason = PageReason::kFirstSample;
  int to_node = -1;  // node index, when reason is kMigrate or kGroupPull
  bool migrate() const { return to_node >= 0; }
};

struct PagePolicyConfig {
  bool two_stage_filter = true;
  uint8_t shared_hold = 1;
};

// `accessing_node`: node index of the sampled vCPU (-1 if unknown);
// `page_node`: node index the page is on now.
// Where the page is relative to the accessing vCPU's group (all false for a
// vCPU on its own).
struct PageGroupContext {
  bool shared_within_group = false;  // the previous sample came from the same group
  bool on_group_nodes = false;       // the page is on a node the group runs on
  bool group_spans_nodes = false;    // the group runs on more than one node
  int primary_node = -1;             // the group's node holding most of its memory
};

PageVerdict OnPageSample(PageState& state, int accessing_node, int page_node,
                         bool destination_has_room, const PagePolicyConfig& config,
                         const PageGroupContext& group = {});

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_PAGE_POLICY_H_
