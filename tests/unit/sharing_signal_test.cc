// Which samples of one visit tell VmBalancer that two vCPUs share memory
// (stats/neighbour_runs.h, through VmBalancer): neighbouring runs of samples, in address
// order, from two vCPUs in turn. Where the scan arms a few neighbouring
// probe pages with one call, a vCPU that goes through memory in order
// touches a whole call's pages before the other does: memory two vCPUs
// stream over shows as whole calls from one and then the other - the NUMA
// lab's numa01 - and never as single pages in turn.
#include <gtest/gtest.h>

#include "balancer/replay/model_placement_view.h"
#include "balancer/vm_balancer.h"

namespace numavm {
namespace {

constexpr uint64_t kRegion = 512;  // 4 KiB pages in 2 MiB

// One call's probe pages in `region`: 4 neighbouring pages, all from `vcpu`.
void AddCall(AccessBatch& batch, uint64_t region, int vcpu) {
  for (uint64_t p = 0; p < 4; ++p) {
    batch.push_back({region * kRegion + 100 + p, vcpu, AccessKind::kWrite, {}});
  }
}

// The balancer's counters after `periods` periods of `batch_of(period)`.
template <typename BatchOf>
BalancerCounters After(int periods, BatchOf batch_of) {
  Topology topology;
  topology.nodes = {NumaNode{0, {0, 1}, 1 << 30, 1 << 30}, NumaNode{1, {2, 3}, 1 << 30, 1 << 30}};
  topology.distance = {{10, 20}, {20, 10}};
  // All memory first touched on node 0; the vCPUs on nodes 0 and 1.
  ModelPlacementView view(topology, 64 * kRegion, {0, 1}, nullptr);
  view.TouchRange({0, 64 * kRegion}, 0);
  BalancerConfig config;
  config.warmup = absl::ZeroDuration();
  VmBalancer balancer(BalanceMode::kOn, topology, 2, 64 * kRegion, view, config);
  for (int period = 0; period < periods; ++period) {
    EXPECT_TRUE(balancer.OnBatch(batch_of(period), absl::Seconds(period)).ok());
  }
  const BalancerCounters c = balancer.counters();
  // The report's series says when the groups formed.
  EXPECT_EQ(c.locality_series.empty() ? -1 : c.locality_series.back().vcpu_groups, c.groups);
  return c;
}

// Two vCPUs streaming over the same memory: each call's pages from one,
// the next call's from the other, in address order.
TEST(SharingSignal, CallsTouchedByTwoVcpusInTurnGroupThem) {
  const BalancerCounters c = After(8, [](int period) {
    AccessBatch batch;
    for (uint64_t r = 0; r < 6; ++r) {
      AddCall(batch, 8 * period + r, (r + period) % 2);
    }
    return batch;
  });
  EXPECT_EQ(c.groups, 1);
  EXPECT_GT(c.neighbours.turns, 0u);
}

// Two vCPUs close behind each other in the same memory touch one call's
// pages in turn, page by page, and some of its pages are not reported
// (touched while being armed): lone samples in turn, a page or two apart.
TEST(SharingSignal, PagesOfOneCallInTurnGroupThem) {
  const BalancerCounters c = After(8, [](int period) {
    AccessBatch batch;
    for (uint64_t r = 0; r < 6; ++r) {
      for (uint64_t p = 0; p < 8; p += 2) {
        batch.push_back({(8 * period + r) * kRegion + 100 + p,
                         static_cast<int>((p / 2) % 2),
                         AccessKind::kWrite,
                         {}});
      }
    }
    return batch;
  });
  EXPECT_EQ(c.groups, 1);
  EXPECT_GT(c.neighbours.turns, 0u);
}

// The same where a call costs the host so much that a period arms one
// call (the lab's 8-12 ms a call): the turns show across periods, as the
// scan goes on in address order.
TEST(SharingSignal, OneCallAPeriodInTurnStillGroups) {
  const BalancerCounters c = After(48, [](int period) {
    AccessBatch batch;
    AddCall(batch, period, period % 2);
    return batch;
  });
  EXPECT_EQ(c.groups, 1);
  EXPECT_GT(c.neighbours.turns, 0u);
  EXPECT_EQ(c.neighbours.cuts, 0u) << "one chain of runs through every period";
}

// Each vCPU its own slice (numa02): calls from one vCPU, then from the
// other - one change of hands at the boundary, no group.
TEST(SharingSignal, SlicesOfTwoVcpusDoNotGroupThem) {
  const BalancerCounters c = After(48, [](int period) {
    AccessBatch batch;
    for (uint64_t r = 0; r < 6; ++r) AddCall(batch, r, r < 3 ? 0 : 1);
    return batch;
  });
  EXPECT_EQ(c.groups, 2);
  EXPECT_EQ(c.neighbours.turns, 0u);
  EXPECT_EQ(c.neighbours.runs, 2u * 48);
  EXPECT_EQ(c.neighbours.cuts, 47u) << "each period starts again behind the last";
}

// Lone pages far apart from two vCPUs in turn (vCPUs that touch some
// memory now and then): no group.
TEST(SharingSignal, LonePagesInTurnFarApartDoNotGroup) {
  const BalancerCounters c = After(48, [](int period) {
    AccessBatch batch;
    // Two vCPUs' own calls, and lone pages of each between them in turn.
    AddCall(batch, 0, 0);
    AddCall(batch, 40, 1);
    for (uint64_t r = 1; r < 7; ++r) {
      batch.push_back({r * kRegion, static_cast<int>(r % 2), AccessKind::kWrite, {}});
    }
    return batch;
  });
  EXPECT_EQ(c.groups, 2);
  EXPECT_EQ(c.neighbours.turns, 0u);
}

}  // namespace
}  // namespace numavm
