#include "balancer/libvirt/qemu_process.h"

#include <gtest/gtest.h>

namespace numavm {
namespace {

TEST(QemuProcess, VcpuThreadsComeFromQueryCpusFast) {
  absl::StatusOr<std::vector<pid_t>> t = ParseVcpuThreads(
      R"({"return":[{"cpu-index":1,"thread-id":502,"qom-path":"/machine/unattached/device[1]"},
                    {"cpu-index":0,"thread-id":501}],"id":"libvirt-1"})");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, (std::vector<pid_t>{501, 502}));
  EXPECT_FALSE(ParseVcpuThreads("not json").ok());
  EXPECT_FALSE(ParseVcpuThreads(R"({"error":{"class":"GenericError","desc":"no"}})").ok());
  EXPECT_FALSE(ParseVcpuThreads(R"({"return":[{"cpu-index":5,"thread-id":1}]})").ok());
}

TEST(QemuProcess, MemdevSizesAddUp) {
  absl::StatusOr<uint64_t> b = ParseMemdevBytes(
      R"({"return":[{"size":134217728,"id":"ram-node0"},{"size":134217728,"id":"ram-node1"}]})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, 256u << 20);
  EXPECT_FALSE(ParseMemdevBytes(R"({"return":[{"id":"x"}]})").ok());
}

TEST(QemuProcess, GuestRamIsTheMappingOfItsSize) {
  absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(
      "55d0c0000000-55d0c0100000 r-xp 00000000 08:01 1234 /usr/bin/qemu-system-x86_64\n"
      "7f0000000000-7f0008000000 rw-s 00000000 00:01 99 /memfd:memory-backend-memfd (deleted)\n"
      "7f1000000000-7f1008200000 rw-p 00000000 00:00 0 \n"
      "7f2000000000-7f2010000000 rw-p 00000000 00:00 0\n");
  ASSERT_TRUE(maps.ok()) << maps.status();
  ASSERT_EQ(maps->size(), 4u);
  EXPECT_EQ((*maps)[1].path, "/memfd:memory-backend-memfd (deleted)");
  EXPECT_FALSE((*maps)[0].writable);
  absl::StatusOr<HostRange> exact = FindGuestRam(*maps, 128u << 20);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->start, 0x7f0000000000u);
  // 130 MiB mapping for 129 MiB of RAM: alignment slack, trimmed.
  absl::StatusOr<HostRange> slack = FindGuestRam(*maps, 129u << 20);
  ASSERT_TRUE(slack.ok());
  EXPECT_EQ(slack->start, 0x7f1000000000u);
  EXPECT_EQ(slack->bytes, 129u << 20);
  EXPECT_TRUE(absl::IsNotFound(FindGuestRam(*maps, 1u << 30).status()));
  EXPECT_FALSE(ParseMaps("garbage\n").ok());
}

}  // namespace
}  // namespace numavm
