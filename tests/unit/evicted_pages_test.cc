// The evict sampler's store: a page comes back once, with the contents and
// node it was saved with (or the node a move asked for while it was away);
// what is not taken is all there at the end.
#include "balancer/sampling/evicted_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace numavm {
namespace {

// A page's contents as Evict reads them: into a buffer of the store's.
std::unique_ptr<uint8_t[]> Filled(EvictedPages& store, uint8_t value) {
  std::unique_ptr<uint8_t[]> bytes = store.Buffer();
  std::memset(bytes.get(), value, EvictedPages::kPageBytes);
  return bytes;
}

TEST(EvictedPagesTest, APageComesBackOnceWithItsContentsAndNode) {
  EvictedPages store;
  store.Put(7, Filled(store, 0xa5), 1);
  store.Put(8, Filled(store, 0x5a), -1);
  EXPECT_EQ(store.size(), 2u);
  std::optional<EvictedPages::Page> p = store.Take(7);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gfn, 7u);
  EXPECT_EQ(p->node, 1);
  const std::vector<uint8_t> a5(EvictedPages::kPageBytes, 0xa5);
  EXPECT_EQ(std::memcmp(p->bytes.get(), a5.data(), EvictedPages::kPageBytes), 0);
  EXPECT_FALSE(store.Take(7).has_value()) << "taken twice";
  EXPECT_FALSE(store.Take(9).has_value()) << "never saved";
  store.Recycle(std::move(p->bytes));
  EXPECT_EQ(store.size(), 1u);
}

TEST(EvictedPagesTest, ARecycledBufferIsTheNextOneHandedOut) {
  EvictedPages store;
  store.Put(1, Filled(store, 1), 0);
  std::optional<EvictedPages::Page> p = store.Take(1);
  ASSERT_TRUE(p.has_value());
  const uint8_t* buffer = p->bytes.get();
  store.Recycle(std::move(p->bytes));
  store.Put(2, Filled(store, 2), 3);
  std::optional<EvictedPages::Page> q = store.Take(2);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->bytes.get(), buffer) << "a new allocation although one was spare";
  EXPECT_EQ(q->node, 3);
  EXPECT_EQ(q->bytes[0], 2);
}

TEST(EvictedPagesTest, SavingAPageAgainKeepsTheLatestContents) {
  EvictedPages store;
  store.Put(5, Filled(store, 1), 0);
  store.Put(5, Filled(store, 2), 1);
  EXPECT_EQ(store.size(), 1u);
  std::optional<EvictedPages::Page> p = store.Take(5);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->node, 1);
  EXPECT_EQ(p->bytes[0], 2);
}

TEST(EvictedPagesTest, APageMovedWhileAwayComesBackForItsNewNode) {
  EvictedPages store;
  store.Put(4, Filled(store, 7), 0);
  EXPECT_TRUE(store.Retarget(4, 2));
  EXPECT_FALSE(store.Retarget(5, 2)) << "a page never saved cannot be moved by the store";
  std::optional<EvictedPages::Page> p = store.Take(4);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->node, 2);
  EXPECT_EQ(p->bytes[0], 7);
  EXPECT_FALSE(store.Retarget(4, 1)) << "a page taken back is the migrator's again";
}

TEST(EvictedPagesTest, ARunIsSavedPageByPageWithEachPagesNode) {
  EvictedPages store;
  std::vector<std::unique_ptr<uint8_t[]>> run = store.Buffers(3);
  ASSERT_EQ(run.size(), 3u);
  for (int i = 0; i < 3; ++i) std::memset(run[i].get(), 10 + i, EvictedPages::kPageBytes);
  store.PutRun(20, run, {1, -1, 0});
  EXPECT_EQ(store.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    std::optional<EvictedPages::Page> p = store.Take(20 + i);
    ASSERT_TRUE(p.has_value()) << "page " << 20 + i;
    EXPECT_EQ(p->node, std::vector<int>({1, -1, 0})[i]);
    EXPECT_EQ(p->bytes[4095], 10 + i);
  }
  EXPECT_FALSE(store.Retarget(21, 1)) << "an emptied store still held a page";
}

TEST(EvictedPagesTest, TakeAllEmptiesTheStore) {
  EvictedPages store;
  for (uint64_t gfn = 0; gfn < 100; ++gfn) store.Put(gfn, Filled(store, 9), 0);
  std::vector<EvictedPages::Page> all = store.TakeAll();
  EXPECT_EQ(all.size(), 100u);
  EXPECT_EQ(store.size(), 0u);
  EXPECT_FALSE(store.Retarget(3, 1)) << "a page taken back is the migrator's again";
  for (const EvictedPages::Page& p : all) EXPECT_EQ(p.bytes[4095], 9);
}

}  // namespace
}  // namespace numavm
