// Guest RAM's residency as the sweep asks for it (AnyResident in
// balancer/sampling/guest_ram.h): a region the guest never touched has no
// memory, one touched page makes it resident, and a memfd page in the page
// cache counts though nothing maps it yet.
#include "balancer/sampling/guest_ram.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace numavm {
namespace {

constexpr uint64_t kRegion = 512;  // pages

TEST(GuestRamTest, OnlyRegionsWithATouchedPageAreResident) {
  const uint64_t pages = 3 * kRegion;
  void* map = ::mmap(nullptr, pages * kGuestPageBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(map, MAP_FAILED);
  auto* host = static_cast<uint8_t*>(map);
  ::madvise(host, pages * kGuestPageBytes, MADV_NOHUGEPAGE);
  host[600 * kGuestPageBytes] = 1;
  // Two slots: gfns 0-767 and, from gfn 1024 (a hole between), the rest.
  GuestRamRegion low{0, 0, 768 * kGuestPageBytes, host};
  GuestRamRegion high{1, 1024 * kGuestPageBytes, 768 * kGuestPageBytes,
                      host + 768 * kGuestPageBytes};
  const std::vector<GuestRamRegion> ram = {low, high};
  EXPECT_FALSE(AnyResident(ram, {0, kRegion}));
  EXPECT_TRUE(AnyResident(ram, {kRegion, kRegion}));
  EXPECT_TRUE(AnyResident(ram, {600, 1}));
  EXPECT_FALSE(AnyResident(ram, {601, 100}));
  EXPECT_FALSE(AnyResident(ram, {1024, 2 * kRegion}));
  EXPECT_TRUE(AnyResident(ram, {0, 4 * kRegion}));  // longer than one mincore
  host[(768 + 300) * kGuestPageBytes] = 1;          // gfn 1024 + 300 in the second slot
  EXPECT_TRUE(AnyResident(ram, {1024, kRegion}));
  EXPECT_FALSE(AnyResident(ram, {768, 256}));  // the hole: no RAM, no memory
  ::munmap(map, pages * kGuestPageBytes);
}

TEST(GuestRamTest, AMemfdPageInThePageCacheIsResident) {
  const int fd = ::memfd_create("guest-ram-test", 0);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 2 * kRegion * kGuestPageBytes), 0);
  void* map =
      ::mmap(nullptr, 2 * kRegion * kGuestPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(map, MAP_FAILED);
  const std::vector<GuestRamRegion> ram = {
      GuestRamRegion{0, 0, 2 * kRegion * kGuestPageBytes, static_cast<uint8_t*>(map)}};
  EXPECT_FALSE(AnyResident(ram, {0, 2 * kRegion}));
  const char byte = 1;
  ASSERT_EQ(::pwrite(fd, &byte, 1, (kRegion + 7) * kGuestPageBytes), 1);  // never mapped here
  EXPECT_FALSE(AnyResident(ram, {0, kRegion}));
  EXPECT_TRUE(AnyResident(ram, {kRegion, kRegion}));
  ::munmap(map, 2 * kRegion * kGuestPageBytes);
  ::close(fd);
}

}  // namespace
}  // namespace numavm
