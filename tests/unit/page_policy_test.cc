#include "balancer/policy/page_policy.h"

#include <gtest/gtest.h>

#include <random>

namespace numavm {
namespace {

// Feeds samples from `nodes` to one page that starts on `page_node`; moves
// the page when told to; returns the number of migrations.
int Replay(const std::vector<int>& nodes, int page_node, const PagePolicyConfig& config = {}) {
  PageState state;
  int migrations = 0;
  for (int n : nodes) {
    PageVerdict v = OnPageSample(state, n, page_node, true, config);
    if (v.migrate()) {
      page_node = v.to_node;
      ++migrations;
    }
  }
  return migrations;
}

TEST(PagePolicy, TwoSamplesFromOneNodeMoveThePage) {
  PageState state;
  EXPECT_EQ(OnPageSample(state, 1, 0, true, {}).reason, PageReason::kFirstSample);
  PageVerdict v = OnPageSample(state, 1, 0, true, {});
  EXPECT_TRUE(v.migrate());
  EXPECT_EQ(v.to_node, 1);
}

// The regression test for the two-stage filter: a single sample from a
// remote node must not move a page.
TEST(PagePolicy, OneRemoteSampleIsNoise) {
  EXPECT_EQ(Replay({0, 0, 0, 1, 0, 0}, 0), 0);
  PageState state;
  EXPECT_FALSE(OnPageSample(state, 1, 0, true, PagePolicyConfig{}).migrate());
  // With the filter off, the same sample would move it: the filter is what
  // prevents that.
  PageState unfiltered;
  EXPECT_TRUE(OnPageSample(unfiltered, 1, 0, true, {.two_stage_filter = false}).migrate());
}

TEST(PagePolicy, NoisyStreamsMigrateRarelyOnlyWithTheFilter) {
  std::mt19937 rng(7);
  std::vector<int> stream;
  for (int i = 0; i < 10000; ++i) stream.push_back(rng() % 10 == 0 ? 1 : 0);  // 10% noise
  int filtered = Replay(stream, 0);
  int unfiltered = Replay(stream, 0, {.two_stage_filter = false});
  EXPECT_LE(filtered, 20);
  EXPECT_GT(unfiltered, 10 * std::max(filtered, 1));
}

TEST(PagePolicy, SharedPagesAreNeverBounced) {
  std::vector<int> alternating;
  for (int i = 0; i < 1000; ++i) alternating.push_back(i % 2);
  EXPECT_EQ(Replay(alternating, 1), 0);
  // Bursts from two nodes: held as shared, so at most the first move.
  std::vector<int> bursts;
  for (int i = 0; i < 1000; ++i) bursts.push_back((i / 2) % 2);
  EXPECT_LE(Replay(bursts, 1), 1);
}

TEST(PagePolicy, APhaseChangeIsFollowedAfterTheHold) {
  std::vector<int> stream(50, 0);
  stream.insert(stream.end(), 50, 1);
  PageState state;
  int page = 0, moved_at = -1;
  for (size_t i = 0; i < stream.size(); ++i) {
    PageVerdict v = OnPageSample(state, stream[i], page, true, {});
    if (v.migrate()) {
      page = v.to_node;
      moved_at = static_cast<int>(i);
    }
  }
  EXPECT_EQ(page, 1);
  // 50 is the first node-1 sample: node-changed, 1 held, then migrate.
  EXPECT_EQ(moved_at, 52);
}

TEST(PagePolicy, AFullNodeIsNeverChosen) {
  PageState state;
  OnPageSample(state, 1, 0, false, {});
  EXPECT_EQ(OnPageSample(state, 1, 0, false, {}).reason, PageReason::kDestinationFull);
}

TEST(PagePolicy, UnattributedSamplesDecideNothing) {
  PageState state;
  EXPECT_EQ(OnPageSample(state, -1, 0, true, {}).reason, PageReason::kUnattributed);
  EXPECT_EQ(state.last_node, PageState::kNoNode);
}

// The budget: at most 4 bytes of balancer state per 4 KiB guest page.
TEST(PageStateTable, FourBytesPerPage) {
  PageStateTable table(1 << 20);  // 4 GiB of guest memory
  EXPECT_EQ(table.memory_bytes(), 4u << 20);
}

}  // namespace
}  // namespace numavm
