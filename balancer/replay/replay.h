// `numavm replay`: runs a recorded access stream through the balancer
// against a placement model of a topology, and compares the outcome with
// the oracle - the best static placement for that stream.
//
// The model: vCPUs start spread over the nodes with CPUs in blocks (vCPU v on
// node v * nodes / vcpus, as HARD places them, within each node's CPUs);
// memory is first touched on vCPU 0's node (`boot`: what a booting guest and
// guest-tools' first-touch phase do) or where each page's first sample came
// from (`sampled`).
// The oracle keeps vCPUs where they started and puts every page on the node
// that accessed it most; its locality is the best any page placement can do
// for that vCPU placement, and its page moves (pages whose best node is not
// their first-touch node) the fewest that reach it.
#ifndef NUMAVM_BALANCER_REPLAY_REPLAY_H_
#define NUMAVM_BALANCER_REPLAY_REPLAY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/replay/trace.h"
#include "balancer/topology/topology.h"
#include "balancer/vm_balancer.h"

namespace numavm {

enum class FirstTouch { kBoot, kSampled };
absl::StatusOr<FirstTouch> ParseFirstTouch(absl::string_view name);
absl::string_view FirstTouchName(FirstTouch first_touch);

struct ReplayOptions {
  BalanceMode mode = BalanceMode::kOn;
  FirstTouch first_touch = FirstTouch::kBoot;
  uint64_t migrate_bytes_per_second = 256ull << 20;
  BalancerConfig balancer;
  // Other work on the host, CPUs' worth per node index (none by default).
  std::vector<double> other_busy;
};

inline constexpr const char* kReplayBestDefinition =
    "each page on the node that accessed it most in the trace, vCPUs where they started";

struct BestPlacement {
  std::vector<int> vcpu_nodes;
  double locality = 0;  // over all attributed samples of the trace
  uint64_t min_page_moves = 0;
  uint64_t pages = 0;  // distinct pages in the trace
};

struct LocalityPoint {
  double seconds = 0;
  double locality = 0;
  uint64_t pages_migrated = 0;  // so far
};

struct ReplayResult {
  BalancerCounters counters;
  BestPlacement best;
  // Ground truth (see above) at the start, after each period, at the end.
  double start_locality = 0;
  double final_locality = 0;
  std::vector<LocalityPoint> series;
  std::optional<double> seconds_to_90pct_of_best;  // since the first period
  std::vector<int> vcpu_start, vcpu_end;
  std::vector<uint64_t> pages_per_node;  // resident pages at the end
  uint64_t remigrations = 0;             // moves of a page that had moved <= 10 s before
  uint64_t bounces = 0;                  // moves back to the node the page left then
  uint64_t periods = 0;
  absl::Duration span;  // trace time covered
};

// vCPU v's start node index: blocks over nodes with CPUs, within their CPUs.
std::vector<int> StartVcpuNodes(const Topology& topology, int vcpus);

BestPlacement ComputeBest(const AccessTrace& trace, const Topology& topology,
                          const std::vector<int>& vcpu_nodes, FirstTouch first_touch);

absl::StatusOr<ReplayResult> Replay(const AccessTrace& trace, const Topology& topology,
                                    const ReplayOptions& options);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPLAY_REPLAY_H_
