// Sizes, counts and files from input are bounded before numavm spends
// memory or time on them: each case here once crashed, hung or silently ran
// on a default (issue: hardening). A bad input is one line and exit 2.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "balancer/replay/trace.h"
#include "balancer/topology/topology.h"
#include "base/read_file.h"
#include "cli/run_config_file.h"
#include "cli/run_options.h"
#include "tests/support/expect_bad_input.h"
#include "tests/support/numavm_process.h"
#include "vmm/elf_payload.h"

namespace numavm {
namespace {

using testing::ExpectBadInput;
using testing::ProcessResult;
using testing::RunNumavm;
using testing::TempFile;

TEST(ReadRegularFile, RefusesDevicesAndDirectoriesAndCapsTheSize) {
  absl::StatusOr<std::string> zero = ReadRegularFile("/dev/zero", "config");
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().message(), "config /dev/zero: not a regular file");
  EXPECT_FALSE(ReadRegularFile("/tmp", "config").ok());
  TempFile big("big.toml", std::string(4096, '#'));
  absl::StatusOr<std::string> capped = ReadRegularFile(big.path(), "config", 1024);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.status().message().find("more than the 1 KiB"), std::string::npos);
  absl::StatusOr<std::string> whole = ReadRegularFile(big.path(), "config", 4096);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->size(), 4096u);
  absl::StatusOr<std::string> missing = ReadRegularFile("/nonexistent/x", "config");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
}

TEST(InputFiles, EveryCommandRefusesAFileThatIsNotRegular) {
  const std::string topo = absl::StrCat(NUMAVM_SOURCE_DIR, "/configs/topology-2node.toml");
  const std::string trace = absl::StrCat(NUMAVM_SOURCE_DIR, "/tests/data/numa02.trace");
  ExpectBadInput(RunNumavm({"run", "--config", "/dev/zero"}),
                 "config /dev/zero: not a regular file");
  ExpectBadInput(RunNumavm({"daemon", "--config", "/dev/zero"}),
                 "config /dev/zero: not a regular file");
  ExpectBadInput(RunNumavm({"replay", trace, "--topology", "/dev/zero"}),
                 "topology /dev/zero: not a regular file");
  ExpectBadInput(RunNumavm({"replay", "/dev/zero", "--topology", topo}),
                 "trace /dev/zero: not a regular file");
  ExpectBadInput(RunNumavm({"run", "--payload", "/dev/null"}),
                 "payload /dev/null: not a regular file");
}

TEST(TraceHeader, PageCountsPastATebibyteGuestAreRefusedBeforeAllocating) {
  auto parse = [](uint64_t pages) {
    return ParseTrace(
        absl::StrCat("numavm-trace 1\nvm vcpus=2 pages=", pages, " period_us=500000\nb 0 1.0.w\n"),
        "t.trace");
  };
  absl::StatusOr<AccessTrace> huge = parse(1ull << 40);
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("t.trace:2: bad page count"), std::string::npos)
      << huge.status();
  EXPECT_FALSE(parse(kMaxTracePages + 1).ok());
  EXPECT_TRUE(parse(kMaxTracePages).ok());
}

TEST(CpuLists, IdsPastTheLimitAreRefusedWithoutExpandingTheRange) {
  absl::StatusOr<std::vector<int>> huge = ParseCpuList("0-2147483647");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("ids go up to 8191"), std::string::npos);
  EXPECT_FALSE(ParseCpuList("0-99999999999999999999").ok());
  EXPECT_FALSE(ParseCpuList("1,1").ok());
  EXPECT_FALSE(ParseCpuList("64", 63).ok());
  EXPECT_EQ(ParseCpuList("0-8191")->size(), 8192u);
  ExpectBadInput(RunNumavm({"run", "--cell", "64M:0-2147483647"}), "ids go up to 63");
  ExpectBadInput(RunNumavm({"run", "--cell", "64M:0-99999999"}), "ids go up to 63");
}

TEST(RunConfig, IntegersThatDoNotFitAreErrorsNotTruncations) {
  RunOptions o;
  absl::Status vcpus = ApplyRunConfig("[vm]\nvcpus = 4294967298\n", "vm.toml", o);
  ASSERT_FALSE(vcpus.ok());
  EXPECT_NE(vcpus.message().find("vm.toml:2: vm.vcpus = 4294967298: want 1-64"), std::string::npos)
      << vcpus;
  EXPECT_FALSE(
      ApplyRunConfig("[[cell]]\nmemory = \"16M\"\nvcpus = [4294967296]\n", "c.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[sampling]\nring_entries = 4294967296\n", "s.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[placement]\nmode = 1\n", "p.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("[report]\nformat = true\n", "r.toml", o).ok());
  EXPECT_FALSE(ApplyRunConfig("payload = \"numa02\"\n", "p.toml", o).ok());
}

TEST(PayloadArguments, ValuesTheGuestCannotReadAreErrors) {
  EXPECT_TRUE(CheckPayloadArgs("size=64M iterations=4 seconds=0").ok());
  for (const char* bad : {"size=abc", "iterations=-1", "size=", "=4", "size=4T", "seconds=1.5",
                          "size=99999999999999999999"}) {
    EXPECT_FALSE(CheckPayloadArgs(bad).ok()) << bad;
  }
  ExpectBadInput(RunNumavm({"run", "--payload", "idle", "--", "size=abc"}),
                 "payload argument 'size=abc'");
  TempFile config("args.toml",
                  std::string("[payload]\nname = \"idle\"\nargs = \"iterations=-1\"\n"));
  ExpectBadInput(RunNumavm({"run", "--config", config.path()}), "payload argument 'iterations=-1'");
}

TEST(Flags, EmptyValuesDurationsAndPortsAreBounded) {
  ExpectBadInput(RunNumavm({"run", "--vcpus", ""}), "--vcpus: an empty value");
  ExpectBadInput(RunNumavm({"run", "--stats-interval", "1ns"}), "--stats-interval: at least 100ms");
  ExpectBadInput(RunNumavm({"run", "--duration", "inf"}), "--duration: 'inf' is more than");
  ExpectBadInput(RunNumavm({"report", "--no-libvirt", "--watch", "nan"}),
                 "--watch: 'nan' is not a duration");
  ExpectBadInput(RunNumavm({"report", "--no-libvirt", "--watch", "1e-300"}), "--watch");
  ExpectBadInput(RunNumavm({"report", "--no-libvirt", "--watch", "1ns"}), "at least 100ms");
  ExpectBadInput(RunNumavm({"daemon", "--metrics-port", "-1"}), "port -1 is not 0-65535");
  ExpectBadInput(RunNumavm({"daemon", "--metrics-address", "999.1.1.1"}),
                 "metrics address '999.1.1.1' is not an IPv4 or IPv6 address");
  ExpectBadInput(RunNumavm({"run", "--memory", "16777217"}),
                 "--memory 16777217 bytes must be a non-zero multiple of 4 KiB");
}

// A valid payload with a 1 GiB sparse tail: only its headers and loadable
// segments are read, so the image stays the size of the segments.
TEST(ElfPayloadFile, OnlyTheLoadableSegmentsAreRead) {
  std::ifstream in(testing::PayloadPath("idle"), std::ios::binary);
  std::vector<unsigned char> image((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), sizeof(Elf64_Ehdr));
  TempFile file("sparse.elf", image);
  ASSERT_EQ(truncate(file.path().c_str(), 1ll << 30), 0);
  absl::StatusOr<ElfPayload> p = ReadElfPayload(file.path());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_LE(p->image.size(), image.size());
  // A loaded segment's bytes are the file's.
  Elf64_Ehdr eh;
  std::memcpy(&eh, image.data(), sizeof(eh));
  Elf64_Phdr ph;
  for (int i = 0; i < eh.e_phnum; ++i) {
    std::memcpy(&ph, image.data() + eh.e_phoff + i * sizeof(ph), sizeof(ph));
    if (ph.p_type == PT_LOAD && ph.p_filesz > 0) break;
  }
  ASSERT_FALSE(p->segments.empty());
  const ElfSegment& s = p->segments.front();
  ASSERT_EQ(s.file_bytes, ph.p_filesz);
  EXPECT_EQ(std::memcmp(p->image.data() + s.file_offset, image.data() + ph.p_offset, s.file_bytes),
            0);
}

TEST(ElfPayloadFile, ErrorsNameTheFile) {
  std::ifstream in(testing::PayloadPath("idle"), std::ios::binary);
  std::vector<unsigned char> image((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  const uint64_t zero = 0;
  std::memcpy(image.data() + offsetof(Elf64_Ehdr, e_entry), &zero, sizeof(zero));
  TempFile file("entry0.elf", image);
  ExpectBadInput(RunNumavm({"run", "--payload", file.path()}),
                 absl::StrCat("payload ", file.path(), ": entry point 0x0"));
  TempFile cut("cut.elf", std::vector<unsigned char>(image.begin(), image.begin() + 100));
  ExpectBadInput(RunNumavm({"run", "--payload", cut.path()}), absl::StrCat("payload ", cut.path()));
}

}  // namespace
}  // namespace numavm
