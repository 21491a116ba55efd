// Bad input to `numavm run`: a one-line error naming the problem, exit 2, no
// crash, and nothing printed on stdout.
#include <elf.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "tests/support/expect_bad_input.h"
#include "tests/support/numavm_process.h"
#include "vmm/host_memory.h"

namespace numavm {
namespace {

using testing::ExpectBadInput;
using testing::ProcessResult;
using testing::RunNumavm;
using testing::TempFile;

TEST(RunErrors, MissingPayloadName) {
  ExpectBadInput(RunNumavm({"run", "--payload", "no_such_workload"}),
                 "payload 'no_such_workload' not found; available: ");
}

TEST(RunErrors, MissingPayloadPath) {
  ExpectBadInput(RunNumavm({"run", "--payload", "/nonexistent/x.elf"}),
                 "payload /nonexistent/x.elf: cannot open: No such file");
}

TEST(RunErrors, NonElfFile) {
  TempFile script("script.elf", std::string("#!/bin/sh\necho hi\n"));
  ExpectBadInput(RunNumavm({"run", "--payload", script.path()}), "not an ELF file");
}

TEST(RunErrors, ElfForAnotherArchitecture) {
  std::ifstream in(testing::PayloadPath("numa02"), std::ios::binary);
  std::vector<unsigned char> image((std::istreambuf_iterator<char>(in)),
                                   std::istreambuf_iterator<char>());
  ASSERT_GT(image.size(), sizeof(Elf64_Ehdr));
  uint16_t aarch64 = EM_AARCH64;
  std::memcpy(image.data() + offsetof(Elf64_Ehdr, e_machine), &aarch64, 2);
  TempFile arm("arm.elf", image);
  ExpectBadInput(RunNumavm({"run", "--payload", arm.path()}), "an ELF for aarch64, not x86-64");
}

TEST(RunErrors, MemoryLargerThanTheHost) {
  absl::StatusOr<HostMemoryInfo> host = ReadHostMemoryInfo();
  ASSERT_TRUE(host.ok());
  uint64_t gib = host->total_bytes / (1ull << 30) * 2 + 2;
  ExpectBadInput(RunNumavm({"run", "--memory", absl::StrCat(gib, "G")}),
                 "is larger than this host's memory");
}

TEST(RunErrors, ZeroVcpus) {
  ExpectBadInput(RunNumavm({"run", "--vcpus", "0"}), "--vcpus must be between 1 and 64, got 0");
}

TEST(RunErrors, HugetlbWithoutReservedPages) {
  absl::StatusOr<HostMemoryInfo> host = ReadHostMemoryInfo();
  ASSERT_TRUE(host.ok());
  if (host->huge_pages_free * (2ull << 20) >= (64ull << 20)) {
    GTEST_SKIP() << "this host has huge pages reserved";
  }
  ExpectBadInput(RunNumavm({"run", "--backing", "hugetlb", "--memory", "64M"}),
                 "--backing=hugetlb needs 32 free 2 MiB huge pages");
}

TEST(RunErrors, MalformedConfig) {
  TempFile config("vm.toml", std::string("[vm]\nvcpus = 2\nmemory = \"512M\n"));
  ExpectBadInput(RunNumavm({"run", "--config", config.path()}), "vm.toml: line 3");
}

TEST(RunErrors, ConfigWithUnknownKey) {
  TempFile config("vm.toml", std::string("[vm]\nvcpu = 2\n"));
  ExpectBadInput(RunNumavm({"run", "--config", config.path()}), "unknown key 'vcpu'");
}

TEST(RunErrors, UnknownBackingAndPlacement) {
  ExpectBadInput(RunNumavm({"run", "--backing", "tmpfs"}),
                 "--backing: 'tmpfs': want memfd, anon, hugetlb or thp");
  ExpectBadInput(RunNumavm({"run", "--placement", "random"}),
                 "--placement: 'random': want none, hard or inverse");
}

TEST(RunErrors, BadPayloadArgument) {
  ExpectBadInput(RunNumavm({"run", "--", "iterations"}), "must look like key=value");
}

TEST(RunErrors, UnknownFlag) {
  ProcessResult r = RunNumavm({"run", "--frobnicate"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("frobnicate"), std::string::npos);
}

TEST(RunErrors, LinuxGuestFlags) {
  TempFile notes("notes.txt", std::string("not a kernel\n"));
  ExpectBadInput(RunNumavm({"run", "--kernel", notes.path()}),
                 absl::StrCat("kernel ", notes.path(), ": not a Linux kernel (13 bytes"));
  ExpectBadInput(RunNumavm({"run", "--kernel", "/nonexistent/bzImage"}),
                 "kernel /nonexistent/bzImage: cannot open: No such file");
  ExpectBadInput(RunNumavm({"run", "--kernel", notes.path(), "--payload", "numa02"}),
                 "--kernel and --payload: a VM boots one or the other");
  ExpectBadInput(RunNumavm({"run", "--initrd", notes.path()}), "--initrd needs --kernel");
  ExpectBadInput(RunNumavm({"run", "--kernel", notes.path(), "--", "size=1M"}),
                 "payload arguments are for payloads");
}

TEST(Help, ListsCommandsPayloadsAndExitCodes) {
  ProcessResult top = RunNumavm({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("run"), std::string::npos);
  ProcessResult run = RunNumavm({"run", "--help"});
  EXPECT_EQ(run.exit_code, 0);
  for (const char* needle :
       {"--vcpus", "--memory", "--backing", "--cell", "--payload", "--placement", "--report",
        "--duration", "--json", "--config", "numa02_chase", "Exit status"}) {
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle;
  }
}

// Each command states the exit statuses it can end with, not run's; and
// 'numavm help COMMAND' is the command's --help.
TEST(Help, EachCommandStatesItsOwnExitStatuses) {
  for (const char* command : {"replay", "attach", "daemon", "report", "detach"}) {
    ProcessResult r = RunNumavm({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command;
    EXPECT_NE(r.out.find("Exit status: 0 "), std::string::npos) << command << r.out;
    EXPECT_EQ(r.out.find("guest fault"), std::string::npos) << command << " has run's statuses";
    ProcessResult help = RunNumavm({"help", command});
    EXPECT_EQ(help.exit_code, 0) << command;
    EXPECT_EQ(help.out, r.out) << command;
  }
  ProcessResult top = RunNumavm({"help"});
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_EQ(top.out, RunNumavm({"--help"}).out);
  ExpectBadInput(RunNumavm({"help", "nosuch"}), "numavm help: no command 'nosuch'");
}

}  // namespace
}  // namespace numavm
