#include "balancer/libvirt/qemu_process.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/proc_file.h"

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

// numa_maps as 6.1 and 6.12 print it: per-node counts in the mapping's
// kernel page size (hugetlb: 2 MiB pages), escaped blanks in paths,
// mappings outside the guest RAM ignored.
TEST(NumaMaps, CountsResidentBytesPerNodeOfTheRamMappings) {
  const std::string text =
      "55d0c0000000 default file=/usr/bin/qemu-system-x86_64 mapped=900 N0=900 "
      "kernelpagesize_kB=4\n"
      "7f0000000000 default file=/memfd:memory-backend-memfd\\040(deleted) dirty=300 N0=100 "
      "N1=200 kernelpagesize_kB=4\n"
      "7f1000000000 bind:1 file=/dev/hugepages/x huge dirty=3 N1=3 kernelpagesize_kB=2048\n"
      "7f2000000000 default anon=5 dirty=5 N3=5 kernelpagesize_kB=4\n"
      "7ffd00000000 default stack anon=8 dirty=8 N0=8 kernelpagesize_kB=4\n";
  absl::StatusOr<std::vector<NumaMapsEntry>> parsed = ParseNumaMaps(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->size(), 5u);
  EXPECT_EQ((*parsed)[1].start, 0x7f0000000000u);
  EXPECT_EQ((*parsed)[2].page_bytes, 2u << 20);

  const std::vector<HostRange> ram = {
      {0x7f0000000000, 1ull << 30}, {0x7f1000000000, 1ull << 30}, {0x7f2000000000, 64 << 20}};
  std::map<int, uint64_t> bytes = ResidentBytesPerNode(*parsed, ram);
  EXPECT_EQ(bytes, (std::map<int, uint64_t>{
                       {0, 100 * 4096}, {1, 200 * 4096 + (3ull * 2 << 20)}, {3, 5 * 4096}}));
  EXPECT_TRUE(ResidentBytesPerNode(*parsed, {{0x1000, 4096}}).empty()) << "no RAM mapping there";

  EXPECT_FALSE(ParseNumaMaps("zzzz default N0=1\n").ok());
  EXPECT_FALSE(ParseNumaMaps("7f00 default N0=x\n").ok());
  EXPECT_FALSE(ParseNumaMaps("7f00 default N-1=2\n").ok());
  EXPECT_FALSE(ParseNumaMaps("7f00 default N0=2 kernelpagesize_kB=0\n").ok());
  // A count beyond any real one saturates, never wraps to a small figure.
  absl::StatusOr<std::vector<NumaMapsEntry>> huge =
      ParseNumaMaps("7f00 default N0=18446744073709551615 kernelpagesize_kB=2048\n");
  ASSERT_TRUE(huge.ok());
  EXPECT_EQ(ResidentBytesPerNode(*huge, {{0x7f00, 4096}})[0], UINT64_MAX);
}

// This process's own numa_maps, from the running kernel: a memfd mapping
// of 8 MiB with 3 MiB touched has 3 MiB resident, all on the nodes the
// kernel reports (one here), and nothing is counted before the touch.
TEST(NumaMaps, TheKernelCountsTheTouchedPagesOfAMapping) {
  const std::string before = ReadProcFile("/proc/self/numa_maps");
  if (before.empty()) GTEST_SKIP() << "no /proc/self/numa_maps (a kernel without NUMA)";
  const int fd = memfd_create("numa-maps-test", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 8 << 20), 0);
  void* p = mmap(nullptr, 8 << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ASSERT_NE(p, MAP_FAILED);
  const std::vector<HostRange> ram = {{reinterpret_cast<uintptr_t>(p), 8 << 20}};
  auto resident = [&] {
    absl::StatusOr<std::vector<NumaMapsEntry>> parsed =
        ParseNumaMaps(ReadProcFile("/proc/self/numa_maps"));
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    uint64_t sum = 0;
    if (parsed.ok()) {
      for (const auto& [node, bytes] : ResidentBytesPerNode(*parsed, ram)) sum += bytes;
    }
    return sum;
  };
  EXPECT_EQ(resident(), 0u);
  for (size_t off = 0; off < (3u << 20); off += 4096) static_cast<char*>(p)[off] = 1;
  EXPECT_EQ(resident(), 3u << 20);
  munmap(p, 8 << 20);
  close(fd);
}

}  // namespace
}  // namespace numavm
