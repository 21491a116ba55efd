#include "balancer/sampling/scan_window.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(ScanWindow, AdvancesAndWraps) {
  ScanWindow w({{0, 10}}, 4);
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 4}}));
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{4, 4}}));
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{8, 2}}));  // the end of RAM
  EXPECT_EQ(w.wraps(), 0u);
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 4}}));
  EXPECT_EQ(w.wraps(), 1u);
}

TEST(ScanWindow, SpansRegionsWithHoles) {
  ScanWindow w({{0, 3}, {100, 5}}, 4);
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 3}, {100, 1}}));
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{101, 4}}));
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 3}, {100, 1}}));
}

TEST(ScanWindow, WindowLargerThanRamCoversItAll) {
  ScanWindow w({{0, 8}}, 1000);
  EXPECT_EQ(w.window_pages(), 8u);
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 8}}));
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 8}}));
}

TEST(ScanWindow, AlignsToHugePages) {
  ScanWindow w({{0, 2048}}, 100, 512);
  EXPECT_EQ(w.window_pages(), 512u);
  EXPECT_EQ(w.Next(), (std::vector<GfnRange>{{0, 512}}));
}

TEST(ScanWindow, EveryPageIsArmedOncePerSweep) {
  ScanWindow w({{0, 1000}, {5000, 37}}, 64);
  std::vector<int> armed(6000, 0);
  uint64_t total = 0;
  while (total < w.total_pages()) {
    for (const GfnRange& r : w.Next()) {
      for (uint64_t g = r.first; g < r.end(); ++g) ++armed[g];
      total += r.count;
    }
  }
  EXPECT_EQ(total, 1037u);
  for (uint64_t g = 0; g < 1000; ++g) EXPECT_EQ(armed[g], 1) << g;
  for (uint64_t g = 5000; g < 5037; ++g) EXPECT_EQ(armed[g], 1) << g;
}

}  // namespace
}  // namespace numavm
