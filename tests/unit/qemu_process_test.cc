#include "balancer/libvirt/qemu_process.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

// The QEMU process of a domain is the one whose command line carries its
// UUID (found under a fake /proc here).
TEST(QemuProcess, TheProcessIsFoundByTheDomainUuidOnItsCommandLine) {
  char pattern[] = "/tmp/numavm-proc-XXXXXX";
  const std::string root = mkdtemp(pattern);
  // /proc/PID/cmdline: the arguments, each ended by a NUL.
  auto process = [&](int pid, std::initializer_list<std::string> args) {
    std::string cmdline;
    for (const std::string& a : args) cmdline += a + '\0';
    std::filesystem::create_directories(absl::StrCat(root, "/", pid));
    std::ofstream(absl::StrCat(root, "/", pid, "/cmdline"), std::ios::binary) << cmdline;
  };
  const std::string uuid = "0d6f2f6e-3f7a-4c1e-9a55-1f2e3d4c5b6a";
  const std::string qemu = "/usr/bin/qemu-system-x86_64";
  process(100, {qemu, "-name", "guest=web1", "-uuid", uuid});
  process(200, {qemu, "-uuid", "aaaaaaaa-0000-0000-0000-000000000000"});
  process(300, {"bash", "-c", "echo -uuid " + uuid});  // names it, not as -uuid UUID
  std::filesystem::create_directories(root + "/self");
  absl::StatusOr<pid_t> pid = FindQemuProcess(uuid, root);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(*pid, 100);
  EXPECT_EQ(*FindQemuProcess("0D6F2F6E-3F7A-4C1E-9A55-1F2E3D4C5B6A", root), 100);
  EXPECT_TRUE(
      absl::IsNotFound(FindQemuProcess("11111111-0000-0000-0000-000000000000", root).status()));
  process(400, {qemu, "-uuid", uuid});
  EXPECT_TRUE(absl::IsFailedPrecondition(FindQemuProcess(uuid, root).status()));
  std::filesystem::remove_all(root);
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
