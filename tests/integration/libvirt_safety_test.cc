// numavm attach and detach keep an operator's host safe, against a real
// libvirt daemon and QEMU (TCG) domains: the administrator's pinning is
// kept (the emulator threads' too), one numavm attaches a domain at a time,
// and a pinning saved before numavm re-pinned survives a kill -9.
#include <signal.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/integration/libvirt_fixture.h"

namespace numavm {
namespace {

using testing::AllCpus;
using testing::BackgroundNumavm;
using testing::Eventually;
using testing::HostCpus;
using testing::LibvirtEnv;
using testing::LibvirtTest;
using testing::ProcessResult;
using testing::RunNumavm;

// An administrator's pinning is a constraint numavm balances within: with
// --balance on (the default) the domain is balanced, its status says
// within what, and no vCPU is pinned outside the CPUs it was allowed -
// here the home is node 0 (this host's only node), so vCPU 0 stays on its
// one CPU and vCPU 1 on all of them: nothing is re-pinned.
TEST_F(LibvirtTest, AnAdministratorsPinningIsKept) {
  LibvirtDomain dom = Domain("memfd");
  const std::vector<int> pinned = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(0, pinned, HostCpus()).ok());
  BackgroundNumavm attach(
      {"attach", dom.name(), "--connect", LibvirtEnv::uri(), "--interval", "200ms"});
  const nlohmann::json* vm = nullptr;
  nlohmann::json report;
  ASSERT_TRUE(Eventually([&] {
    report = ReportJson();
    vm = Find(report, dom.name());
    return vm != nullptr && (*vm)["status"].get<std::string>().rfind("balancing", 0) == 0;
  })) << report.dump(2)
      << attach.err();
  EXPECT_EQ((*vm)["status"].get<std::string>().rfind(
                absl::StrCat("balancing within the administrator's placement (vCPU 0 may run "
                             "only on CPUs ",
                             HostCpus() - 1, "): home node(s) 0"),
                0),
            0u)
      << (*vm)["status"];
  EXPECT_EQ((*vm)["vcpu_moves"], 0);
  EXPECT_EQ((*vm)["pages_migrated"], 0);
  EXPECT_EQ(Pinning(dom)[0], pinned);
  EXPECT_EQ(Pinning(dom)[1], AllCpus());
  ProcessResult detach = RunNumavm({"detach", dom.name()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_EQ(attach.Wait(30).exit_code, 0);
  EXPECT_EQ(Pinning(dom)[0], pinned);
  ASSERT_TRUE(dom.Destroy().ok());
}

// Memory bound by <numatune> (and a cell's <memnode>) limits the homes to
// those nodes; the status names the binding.
TEST_F(LibvirtTest, MemoryBoundByNumatuneIsPlannedWithin) {
  absl::StatusOr<LibvirtDomain> dom =
      LibvirtEnv::CreateDomain("memfd", 2, testing::kMemoryMib, 2,
                               "<numatune><memory mode='strict' nodeset='0'/>"
                               "<memnode cellid='1' mode='strict' nodeset='0'/></numatune>");
  ASSERT_TRUE(dom.ok()) << dom.status();
  BackgroundNumavm attach(
      {"attach", dom->name(), "--connect", LibvirtEnv::uri(), "--interval", "200ms"});
  const std::string status = BalancingStatus(dom->name(), attach);
  ASSERT_EQ(status.rfind("balancing", 0), 0u) << status;
  EXPECT_EQ(status.rfind("balancing within the administrator's placement (cell 0: memory bound "
                         "by <numatune> mode='strict' nodeset='0'; cell 1: memory bound by "
                         "<numatune> mode='strict' nodeset='0'; memory bound by <memnode "
                         "cellid='1'> mode='strict' nodeset='0'): homes per cell",
                         0),
            0u)
      << status;
  ProcessResult detach = RunNumavm({"detach", dom->name()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_EQ(attach.Wait(30).exit_code, 0);
  ASSERT_TRUE(dom->Destroy().ok());
}

// <emulatorpin> is the administrator's too: numavm never re-pins QEMU's
// emulator threads, before or after detach, and the status says where they
// stay beside the homes.
TEST_F(LibvirtTest, PinnedEmulatorThreadsStayWhereTheAdministratorPutThem) {
  const int cpu = HostCpus() - 1;
  absl::StatusOr<LibvirtDomain> dom = LibvirtEnv::CreateDomain(
      "memfd", 2, testing::kMemoryMib, 0,
      absl::StrCat("<cputune><emulatorpin cpuset='", cpu, "'/></cputune>"));
  ASSERT_TRUE(dom.ok()) << dom.status();
  BackgroundNumavm attach(
      {"attach", dom->name(), "--connect", LibvirtEnv::uri(), "--interval", "200ms"});
  const std::string status = BalancingStatus(dom->name(), attach);
  ASSERT_EQ(status.rfind("balancing", 0), 0u) << status;
  const std::string note = absl::StrCat("; emulator threads stay on CPUs ", cpu,
                                        " (node 0), where the administrator pinned them");
  ASSERT_GE(status.size(), note.size());
  EXPECT_EQ(status.substr(status.size() - note.size()), note) << status;
  EXPECT_EQ(*dom->EmulatorPinning(HostCpus()), std::vector<int>{cpu});
  ProcessResult detach = RunNumavm({"detach", dom->name()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_EQ(attach.Wait(30).exit_code, 0);
  EXPECT_EQ(*dom->EmulatorPinning(HostCpus()), std::vector<int>{cpu});
  ASSERT_TRUE(dom->Destroy().ok());
}

// One numavm per domain: a second attach is refused and names the first.
TEST_F(LibvirtTest, ASecondAttachOfADomainIsRefused) {
  LibvirtDomain dom = Domain("memfd");
  BackgroundNumavm first(
      {"attach", dom.name(), "--connect", LibvirtEnv::uri(), "--interval", "200ms"});
  ASSERT_TRUE(Eventually([&] {
    return Find(ReportJson(), dom.name()) != nullptr &&
           (*Find(ReportJson(), dom.name()))["manager"] == "numavm attach";
  })) << first.err();
  ProcessResult second =
      RunNumavm({"attach", dom.name(), "--connect", LibvirtEnv::uri(), "--duration", "1s"});
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find(absl::StrCat("is already attached by numavm pid ", first.pid())),
            std::string::npos)
      << second.err;
  EXPECT_TRUE(first.running());
  first.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(30).exit_code, 0);
  ASSERT_TRUE(dom.Destroy().ok());
}

// kill -9 of the attaching numavm: the pinning it saved before re-pinning
// is what 'numavm detach' puts back with no numavm running, and what a new
// attach takes as the original (not the pinning the dead one set).
TEST_F(LibvirtTest, APinningSavedByAKilledNumavmIsRestored) {
  LibvirtDomain dom = Domain("memfd");
  const std::vector<int> original = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(0, original, HostCpus()).ok());
  const std::vector<std::string> args = {
      "attach",     dom.name(), "--connect",         LibvirtEnv::uri(),
      "--interval", "200ms",    "--override-pinning"};
  {
    BackgroundNumavm killed(args);
    ASSERT_TRUE(Eventually([&] { return Pinning(dom)[0] == AllCpus(); })) << killed.err();
    killed.Signal(SIGKILL);
    killed.Wait(30);
  }
  ASSERT_EQ(Pinning(dom)[0], AllCpus()) << "the killed numavm restored nothing";
  {
    // A new attach: the original is the saved one.
    BackgroundNumavm again(args);
    ASSERT_TRUE(Eventually([&] {
      const nlohmann::json r = ReportJson();
      return Find(r, dom.name()) != nullptr;
    })) << again.err();
    again.Signal(SIGKILL);
    again.Wait(30);
  }
  ProcessResult detach = RunNumavm({"detach", dom.name(), "--connect", LibvirtEnv::uri()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_NE(detach.out.find("restored the vCPU pinning of " + dom.name()), std::string::npos)
      << detach.out;
  EXPECT_EQ(Pinning(dom)[0], original) << "the pinning found before numavm first pinned it";
  ProcessResult twice = RunNumavm({"detach", dom.name(), "--connect", LibvirtEnv::uri()});
  EXPECT_EQ(twice.exit_code, 2) << "nothing is left to restore: " << twice.out << twice.err;
  ASSERT_TRUE(dom.Destroy().ok());
}

}  // namespace
}  // namespace numavm
