// The evict sampler's store: a page comes back once, with the contents and
// node it was saved with; what is not taken is all there at the end.
#include "balancer/sampling/evicted_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace numavm {
namespace {

std::vector<uint8_t> Filled(uint8_t value) {
  return std::vector<uint8_t>(EvictedPages::kPageBytes, value);
}

TEST(EvictedPagesTest, APageComesBackOnceWithItsContentsAndNode) {
  EvictedPages store;
  std::vector<uint8_t> a = Filled(0xa5), b = Filled(0x5a);
  store.Put(7, a.data(), 1);
  store.Put(8, b.data(), -1);
  a[0] = 0;  // the guest's page is gone; the store kept its own copy
  EXPECT_EQ(store.size(), 2u);
  std::optional<EvictedPages::Page> p = store.Take(7);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->gfn, 7u);
  EXPECT_EQ(p->node, 1);
  EXPECT_EQ(std::memcmp(p->bytes.get(), Filled(0xa5).data(), EvictedPages::kPageBytes), 0);
  EXPECT_FALSE(store.Take(7).has_value()) << "taken twice";
  EXPECT_FALSE(store.Take(9).has_value()) << "never saved";
  store.Recycle(*std::move(p));
  EXPECT_EQ(store.size(), 1u);
}

TEST(EvictedPagesTest, ARecycledBufferHoldsTheNextPageNotTheOldOne) {
  EvictedPages store;
  std::vector<uint8_t> a = Filled(1), b = Filled(2);
  store.Put(1, a.data(), 0);
  store.Recycle(*store.Take(1));
  store.Put(2, b.data(), 3);
  std::optional<EvictedPages::Page> p = store.Take(2);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->node, 3);
  EXPECT_EQ(std::memcmp(p->bytes.get(), b.data(), EvictedPages::kPageBytes), 0);
}

TEST(EvictedPagesTest, SavingAPageAgainKeepsTheLatestContents) {
  EvictedPages store;
  std::vector<uint8_t> a = Filled(1), b = Filled(2);
  store.Put(5, a.data(), 0);
  store.Put(5, b.data(), 1);
  EXPECT_EQ(store.size(), 1u);
  std::optional<EvictedPages::Page> p = store.Take(5);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->node, 1);
  EXPECT_EQ(p->bytes[0], 2);
}

TEST(EvictedPagesTest, TakeAllEmptiesTheStore) {
  EvictedPages store;
  std::vector<uint8_t> a = Filled(9);
  for (uint64_t gfn = 0; gfn < 100; ++gfn) store.Put(gfn, a.data(), 0);
  std::vector<EvictedPages::Page> all = store.TakeAll();
  EXPECT_EQ(all.size(), 100u);
  EXPECT_EQ(store.size(), 0u);
  for (const EvictedPages::Page& p : all) EXPECT_EQ(p.bytes[4095], 9);
}

}  // namespace
}  // namespace numavm
