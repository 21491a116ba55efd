// The placement view of a VM in this process (balancer/host_placement_view.h):
// a move of a page an access sampler holds away from the guest (the evict
// sampler's probes) goes to the sampler, which brings the page back on the
// node asked for; every other page is moved by move_pages as before.
#include "balancer/host_placement_view.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <utility>
#include <vector>

namespace numavm {
namespace {

TEST(HostPlacementViewTest, AMoveOfAHeldPageIsTheHoldersAndCountsAsMoved) {
  absl::StatusOr<Topology> topology = ReadHostTopology();
  if (!topology.ok()) GTEST_SKIP() << "no NUMA topology here: " << topology.status();
  constexpr uint64_t kPages = 8;
  void* map = ::mmap(nullptr, kPages * kGuestPageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  std::memset(map, 1, kPages * kGuestPageBytes);
  GuestRamRegion r;
  r.bytes = kPages * kGuestPageBytes;
  r.host = static_cast<uint8_t*>(map);
  RateLimiter limiter(1ull << 30, 1ull << 30, absl::ZeroDuration());
  HostPlacementView view(
      *topology, {r}, [] { return std::vector<pid_t>{}; }, &limiter);
  std::vector<std::pair<uint64_t, int>> asked;
  view.set_held_pages([&asked](uint64_t gfn, int node) {
    asked.push_back({gfn, node});
    return gfn == 3 || gfn == 5;
  });
  std::vector<std::pair<uint64_t, int>> moves;
  for (uint64_t gfn = 0; gfn < kPages; ++gfn) moves.push_back({gfn, 0});
  moves.push_back({1000, 0});  // outside guest RAM: nobody's
  absl::StatusOr<MigrationOutcome> out = view.MovePages(moves, absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, kPages) << "held pages count as moved, the rest moved where they are";
  EXPECT_EQ(out->bytes_moved, kPages * kGuestPageBytes);
  EXPECT_EQ(out->failed, 0u);
  EXPECT_EQ(view.held_moves(), 2u);
  ASSERT_EQ(asked.size(), kPages) << "every page of guest RAM asked about, no other";
  for (const auto& [gfn, node] : asked) {
    EXPECT_EQ(node, topology->nodes[0].id) << "the holder is told the host's node id";
  }
  ::munmap(map, kPages * kGuestPageBytes);
}

}  // namespace
}  // namespace numavm
