// NeighbourRuns on its own: which runs of samples, in address order, count
// as two vCPUs in turn, and how much each is worth.
#include "balancer/stats/neighbour_runs.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

namespace numavm {
namespace {

constexpr uint64_t kRegion = 512;  // 4 KiB pages in 2 MiB
constexpr uint64_t kSpan = 7;      // regions (RegionBalancer::kBracketSpan)
constexpr uint64_t kNear = 64;     // pages (ScanControl::kMaxRunPages)
constexpr uint64_t kGuestPages = 64 * kRegion;

using Shared = std::vector<std::tuple<int, int, uint64_t>>;

// Samples on `pages` from `vcpu`, one each.
void Add(AccessBatch& batch, int vcpu, std::initializer_list<uint64_t> pages) {
  for (uint64_t p : pages) batch.push_back({p, vcpu, AccessKind::kWrite, {}});
}

Shared Feed(NeighbourRuns& runs, const AccessBatch& batch, int vcpus = 4) {
  Shared shared;
  runs.Add(batch, vcpus, kGuestPages,
           [&](int a, int b, uint64_t n) { shared.emplace_back(a, b, n); });
  return shared;
}

TEST(NeighbourRuns, ThreeRunsInTurnCountTheShortest) {
  NeighbourRuns runs(kSpan, kNear);
  AccessBatch batch;
  // Out of order on purpose: the runs are taken in address order.
  Add(batch, 1, {200, 201});
  Add(batch, 0, {100, 101, 102});
  Add(batch, 0, {300, 301, 302, 303});
  // A fourth run: closes (0, 1, 0); the next triple (1, 0, 2) is not two
  // vCPUs in turn, and the last (0, 2) is open until more samples come.
  Add(batch, 2, {400, 401});
  const Shared shared = Feed(runs, batch);
  ASSERT_EQ(shared.size(), 1u);
  EXPECT_EQ(shared[0], std::make_tuple(0, 1, 2u));
  EXPECT_EQ(runs.counts().runs, 4u);
  EXPECT_EQ(runs.counts().turns, 1u);
  EXPECT_EQ(runs.counts().cuts, 0u);
}

TEST(NeighbourRuns, ALoneSampleCountsOnlyWithinOneCallsReach) {
  {
    NeighbourRuns runs(kSpan, kNear);
    AccessBatch batch;
    Add(batch, 0, {100, 101});
    Add(batch, 1, {130});
    Add(batch, 0, {160, 161});
    Add(batch, 3, {170});  // closes the triple
    EXPECT_EQ(Feed(runs, batch), (Shared{{0, 1, 1}}));
  }
  {
    NeighbourRuns runs(kSpan, kNear);
    AccessBatch batch;
    Add(batch, 0, {100, 101});
    Add(batch, 1, {100 + 2 * kNear});  // a whole call's reach away
    Add(batch, 0, {100 + 4 * kNear, 101 + 4 * kNear});
    Add(batch, 3, {2000});
    EXPECT_EQ(Feed(runs, batch), Shared{});
    EXPECT_EQ(runs.counts().turns, 0u);
  }
}

TEST(NeighbourRuns, RunsGoOnIntoTheNextBatchInAddressOrder) {
  NeighbourRuns runs(kSpan, kNear);
  AccessBatch first, second, third;
  Add(first, 0, {0, 1, 2, 3});
  Add(first, 1, {kRegion, kRegion + 1, kRegion + 2, kRegion + 3});
  EXPECT_EQ(Feed(runs, first), Shared{});
  Add(second, 0, {2 * kRegion, 2 * kRegion + 1, 2 * kRegion + 2, 2 * kRegion + 3});
  Add(second, 1, {3 * kRegion});  // closes (0, 1, 0) from two batches
  EXPECT_EQ(Feed(runs, second), (Shared{{0, 1, 4}}));
  EXPECT_EQ(runs.counts().cuts, 0u);
  // A batch that starts behind the last sample cuts the chain; the open
  // triple (1, 0, 1, its last a lone sample a region on) counts nothing.
  Add(third, 0, {10});
  Add(third, 1, {kRegion + 10});
  EXPECT_EQ(Feed(runs, third), Shared{});
  EXPECT_EQ(runs.counts().cuts, 1u);
}

TEST(NeighbourRuns, RunsTooFarApartAreNotNeighbours) {
  NeighbourRuns runs(kSpan, kNear);
  AccessBatch batch;
  Add(batch, 0, {0, 1});
  Add(batch, 1, {(kSpan + 1) * kRegion, (kSpan + 1) * kRegion + 1});
  Add(batch, 0, {(2 * kSpan + 2) * kRegion, (2 * kSpan + 2) * kRegion + 1});
  Add(batch, 2, {(2 * kSpan + 2) * kRegion + 5});
  EXPECT_EQ(Feed(runs, batch), Shared{});
  EXPECT_EQ(runs.counts().cuts, 2u);
}

TEST(NeighbourRuns, SamplesWithoutAVcpuOrPastTheGuestAreLeftOut) {
  NeighbourRuns runs(kSpan, kNear);
  AccessBatch batch;
  Add(batch, 0, {100, 101});
  Add(batch, kUnknownVcpu, {110});
  Add(batch, 7, {120});          // no such vCPU (4)
  Add(batch, 1, {kGuestPages});  // past the guest
  Add(batch, 1, {130, 131});
  Add(batch, 0, {140, 141});
  Add(batch, 2, {150});
  EXPECT_EQ(Feed(runs, batch), (Shared{{0, 1, 2}}));
  EXPECT_EQ(runs.counts().runs, 4u);
}

}  // namespace
}  // namespace numavm
