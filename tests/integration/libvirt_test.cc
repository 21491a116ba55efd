// numavm attach / detach / report / daemon against a real libvirt daemon
// and real QEMU (TCG) domains with memfd and anonymous RAM.
#include <gtest/gtest.h>
#include <httplib.h>
#include <numaif.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/libvirt/domain_cells.h"
#include "balancer/libvirt/qemu_process.h"
#include "base/proc_file.h"
#include "tests/integration/libvirt_env.h"
#include "tests/integration/libvirt_fixture.h"
#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::AllCpus;
using testing::BackgroundNumavm;
using testing::Eventually;
using testing::HostCpus;
using testing::kMemoryMib;
using testing::LibvirtEnv;
using testing::LibvirtTest;
using testing::ProcessResult;
using testing::ReportSchemaProblems;
using testing::RunNumavm;

class AttachTest : public LibvirtTest, public ::testing::WithParamInterface<std::string> {};

// The whole round trip: attach pins the vCPUs to the home node's CPUs (read
// back through libvirt), the report shows the domain with its true size
// and vCPU count and memory on the node move_pages says, detach puts the
// original pinning back.
TEST_P(AttachTest, PinsReportsAndRestoresTheOriginalPinning) {
  LibvirtDomain dom = Domain(GetParam());
  ASSERT_TRUE(dom.active());
  // An original pinning that differs from the home node's CPUs.
  const std::vector<int> original = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(0, original, HostCpus()).ok());
  ASSERT_EQ(Pinning(dom)[0], original);

  BackgroundNumavm attach({"attach", dom.name(), "--connect", LibvirtEnv::uri(), "--interval",
                           "200ms", "--json", "--override-pinning"});
  // On this host the home node is node 0, whose CPUs are all CPUs.
  ASSERT_TRUE(Eventually([&] { return Pinning(dom)[0] == AllCpus(); })) << attach.err();
  EXPECT_EQ(Pinning(dom)[1], AllCpus());

  nlohmann::json report = ReportJson();
  const nlohmann::json* vm = Find(report, dom.name());
  ASSERT_NE(vm, nullptr) << report.dump(2);
  EXPECT_EQ((*vm)["kind"], "libvirt");
  EXPECT_EQ((*vm)["manager"], "numavm attach");
  EXPECT_EQ((*vm)["vcpus"], 2);
  EXPECT_EQ((*vm)["memory_bytes"], uint64_t{kMemoryMib} << 20);
  uint64_t resident = 0;
  for (const auto& [node, bytes] : (*vm)["memory_per_node"].items())
    resident += bytes.get<uint64_t>();
  EXPECT_EQ(resident, uint64_t{kMemoryMib} << 20) << "all RAM was allocated at start";
  EXPECT_DOUBLE_EQ((*vm)["placement_locality"].get<double>(), 1.0);
  EXPECT_GE((*vm)["vcpu_moves"].get<int>(), 1);

  ProcessResult detach = RunNumavm({"detach", dom.name()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_NE(detach.out.find("detached " + dom.name()), std::string::npos) << detach.out;
  ProcessResult done = attach.Wait(30);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  // Its final report: the same VM object as `numavm report`'s.
  EXPECT_EQ(ReportSchemaProblems(done.out), "") << done.out;
  const nlohmann::json final_report = nlohmann::json::parse(done.out, nullptr, false);
  ASSERT_TRUE(final_report.is_object()) << done.out;
  EXPECT_EQ(final_report["command"], "attach");
  ASSERT_NE(Find(final_report, dom.name()), nullptr) << done.out;
  EXPECT_EQ((*Find(final_report, dom.name()))["mode"], "on");
  // Detached by 'numavm detach' before attach stopped: still in its report.
  EXPECT_EQ((*Find(final_report, dom.name()))["status"], "detached (vCPU pinning restored)");
  // Attached, balanced, reported and detached: libvirt never marked the
  // domain tainted (QMP passthrough would have: "custom-monitor").
  const std::string log = ReadProcFile("/var/log/libvirt/qemu/" + dom.name() + ".log");
  ASSERT_FALSE(log.empty()) << "the domain's libvirt log";
  EXPECT_EQ(log.find("tainted: custom-monitor"), std::string::npos) << log;
  EXPECT_EQ(Pinning(dom)[0], original) << "detach restores the pinning found at attach";
  EXPECT_EQ(Pinning(dom)[1], AllCpus());
  ASSERT_TRUE(dom.Destroy().ok());
}

INSTANTIATE_TEST_SUITE_P(Backings, AttachTest, ::testing::Values("memfd", "anon"));

// A domain with two guest NUMA cells (one backend per cell in QEMU): both
// cells' RAM is found and measured through move_pages on the QEMU pid,
// each cell gets a home and its vCPUs are pinned there (read back through
// libvirt), and the report says so per cell. On this one-node host both
// homes are node 0; that each cell's memory then follows its own vCPUs is
// the balancer's, tested on 2- and 4-node models (cell_balancing_test.cc).
TEST_P(AttachTest, ATwoCellDomainIsMeasuredAndHomedPerCell) {
  LibvirtDomain dom = Domain(GetParam(), 2, 2);
  ASSERT_TRUE(dom.active());
  const std::vector<int> original = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(1, original, HostCpus()).ok());

  // The cells' RAM, as numavm finds it: 64 MiB each, every page resident.
  absl::StatusOr<pid_t> pid = FindQemuProcess(dom.uuid());
  ASSERT_TRUE(pid.ok()) << pid.status();
  absl::StatusOr<std::string> xml = dom.XmlDesc();
  ASSERT_TRUE(xml.ok()) << xml.status();
  absl::StatusOr<std::vector<DomainCell>> cells = ParseDomainCells(*xml, 2);
  ASSERT_TRUE(cells.ok()) << cells.status();
  ASSERT_EQ(cells->size(), 2u);
  absl::StatusOr<std::vector<MapsEntry>> maps =
      ParseMaps(ReadProcFile(absl::StrCat("/proc/", *pid, "/maps")));
  ASSERT_TRUE(maps.ok());
  absl::StatusOr<std::vector<HostRange>> ram = FindCellRam(*maps, *cells);
  ASSERT_TRUE(ram.ok()) << ram.status();
  for (const HostRange& r : *ram) {
    ASSERT_EQ(r.bytes, uint64_t{kMemoryMib / 2} << 20);
    std::vector<void*> pages;
    for (uint64_t off = 0; off < r.bytes; off += 4096) {
      pages.push_back(reinterpret_cast<void*>(r.start + off));
    }
    absl::StatusOr<std::vector<int>> nodes = QueryNodesOf(*pid, pages);
    ASSERT_TRUE(nodes.ok()) << nodes.status();
    EXPECT_EQ(std::count(nodes->begin(), nodes->end(), 0), static_cast<long>(pages.size()))
        << "a cell's RAM is resident (allocation mode='immediate')";
  }

  BackgroundNumavm attach({"attach", dom.name(), "--connect", LibvirtEnv::uri(), "--interval",
                           "200ms", "--json", "--override-pinning"});
  ASSERT_TRUE(Eventually([&] { return Pinning(dom)[1] == AllCpus(); })) << attach.err();
  nlohmann::json report;
  ASSERT_TRUE(Eventually([&] {
    report = ReportJson();
    const nlohmann::json* vm = Find(report, dom.name());
    return vm != nullptr && absl::StrContains((*vm)["status"].get<std::string>(), "homes per cell");
  })) << report.dump(2)
      << attach.err();
  const nlohmann::json& vm = *Find(report, dom.name());
  EXPECT_EQ(vm["memory_bytes"], uint64_t{kMemoryMib} << 20) << "both cells";
  uint64_t resident = 0;
  for (const auto& [node, bytes] : vm["memory_per_node"].items()) resident += bytes.get<uint64_t>();
  EXPECT_EQ(resident, uint64_t{kMemoryMib} << 20) << "both cells' pages were queried";
  const std::string status = vm["status"];
  EXPECT_TRUE(absl::StrContains(status, "cell 0 -> node(s) 0")) << status;
  EXPECT_TRUE(absl::StrContains(status, "cell 1 -> node(s) 0")) << status;
  EXPECT_EQ(vm["home_nodes"], nlohmann::json::array({0}));

  ProcessResult detach = RunNumavm({"detach", dom.name()});
  EXPECT_EQ(detach.exit_code, 0) << detach.err;
  EXPECT_EQ(attach.Wait(30).exit_code, 0);
  EXPECT_EQ(Pinning(dom)[1], original) << "detach restores the pinning found at attach";
  ASSERT_TRUE(dom.Destroy().ok());
}

// A domain larger than one round's query (1 GiB): the one-shot report
// still shows all of its RAM where it is - the kernel's per-node count of
// the RAM mappings (numa_maps) - not the first GiB alone, and the
// placement locality is of all of it.
TEST_P(AttachTest, TheReportOfADomainLargerThanOneRoundShowsAllItsMemory) {
  constexpr int kBigMib = 1536;
  LibvirtDomain dom = Domain(GetParam(), 2, 0, kBigMib);
  ASSERT_TRUE(dom.active());
  nlohmann::json report = ReportJson();
  const nlohmann::json* vm = Find(report, dom.name());
  ASSERT_NE(vm, nullptr) << report.dump(2);
  EXPECT_EQ((*vm)["memory_bytes"], uint64_t{kBigMib} << 20);
  uint64_t resident = 0;
  for (const auto& [node, bytes] : (*vm)["memory_per_node"].items())
    resident += bytes.get<uint64_t>();
  // All of it was allocated at start; up to 4 MiB of alignment slack past
  // the RAM may count with it (docs/libvirt.md).
  EXPECT_GE(resident, uint64_t{kBigMib} << 20) << (*vm).dump(2);
  EXPECT_LE(resident, (uint64_t{kBigMib} + 4) << 20) << (*vm).dump(2);
  ASSERT_TRUE(dom.Destroy().ok());
}

// move_pages works on the QEMU process: the RAM numavm finds is the guest's
// (every page resident), and pages can be moved (to node 0 here, the only
// node) and queried again.
TEST_F(LibvirtTest, GuestRamPagesAreQueriedAndMovedOnTheQemuPid) {
  LibvirtDomain dom = Domain("memfd");
  absl::StatusOr<pid_t> pid = FindQemuProcess(dom.uuid());
  ASSERT_TRUE(pid.ok()) << pid.status();
  // The same process libvirt itself records for the domain.
  const std::string pidfile = ReadProcFile("/run/libvirt/qemu/" + dom.name() + ".pid");
  ASSERT_FALSE(pidfile.empty()) << "libvirt's pidfile for " << dom.name();
  EXPECT_EQ(absl::StrCat(*pid), std::string(absl::StripAsciiWhitespace(pidfile)));
  absl::StatusOr<std::vector<MapsEntry>> maps =
      ParseMaps(ReadProcFile(absl::StrCat("/proc/", *pid, "/maps")));
  ASSERT_TRUE(maps.ok());
  absl::StatusOr<HostRange> ram = FindGuestRam(*maps, uint64_t{kMemoryMib} << 20);
  ASSERT_TRUE(ram.ok()) << ram.status();

  std::vector<void*> pages;
  for (uint64_t off = 0; off < ram->bytes; off += 4096) {
    pages.push_back(reinterpret_cast<void*>(ram->start + off));
  }
  absl::StatusOr<std::vector<int>> nodes = QueryNodesOf(*pid, pages);
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  for (int n : *nodes) ASSERT_EQ(n, 0) << "every guest page is resident on node 0";

  std::vector<void*> some(pages.begin(), pages.begin() + 512);
  std::vector<int> to(512, 0), status(512, -1);
  ASSERT_EQ(move_pages(*pid, some.size(), some.data(), to.data(), status.data(), MPOL_MF_MOVE), 0)
      << std::strerror(errno);
  for (int st : status) EXPECT_EQ(st, 0);
  ASSERT_TRUE(dom.Destroy().ok());
}

// A domain destroyed while attached: a clear message, the other domain is
// still balanced, and its pinning is restored at the end.
TEST_F(LibvirtTest, ADomainDestroyedMidAttachIsDroppedAndNothingElseIsDisturbed) {
  LibvirtDomain doomed = Domain("memfd");
  LibvirtDomain other = Domain("anon");
  const std::vector<int> original = {0};
  ASSERT_TRUE(other.PinVcpu(1, original, HostCpus()).ok());
  BackgroundNumavm attach({"attach", doomed.name(), other.name(), "--connect", LibvirtEnv::uri(),
                           "--interval", "200ms", "--override-pinning"});
  ASSERT_TRUE(Eventually([&] { return Pinning(other)[1] == AllCpus(); })) << attach.err();
  ASSERT_TRUE(doomed.Destroy().ok());
  ASSERT_TRUE(Eventually([&] {
    return attach.err().find("domain '" + doomed.name() + "'") != std::string::npos &&
           attach.err().find("no longer balanced") != std::string::npos;
  })) << attach.err();
  EXPECT_TRUE(attach.running()) << "the other domain is still attached";
  nlohmann::json report = ReportJson();
  EXPECT_EQ(Find(report, doomed.name()), nullptr);
  ASSERT_NE(Find(report, other.name()), nullptr) << report.dump(2);
  EXPECT_EQ((*Find(report, other.name()))["manager"], "numavm attach");

  attach.Signal(SIGTERM);
  ProcessResult done = attach.Wait(30);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(Pinning(other)[1], original);
  ASSERT_TRUE(other.Destroy().ok());
}

TEST_F(LibvirtTest, BadNamesAreCleanErrors) {
  ProcessResult r = RunNumavm({"attach", "no-such-domain-here", "--connect", LibvirtEnv::uri()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("domain 'no-such-domain-here'"), std::string::npos) << r.err;
  ProcessResult none = RunNumavm({"attach", "--connect", LibvirtEnv::uri()});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("name the domains to attach, or give --all"), std::string::npos);
  ProcessResult detach = RunNumavm({"detach", "not-attached-anywhere"});
  EXPECT_EQ(detach.exit_code, 2);
  EXPECT_NE(detach.err.find("no numavm process has 'not-attached-anywhere' attached"),
            std::string::npos)
      << detach.err;
}

// Prometheus text: "# HELP", "# TYPE" and "name{labels} value" lines only;
// returns series -> value, or fails the test on any other line.
std::map<std::string, double> ParsePrometheus(const std::string& text) {
  std::map<std::string, double> series;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "# HELP ") || absl::StartsWith(line, "# TYPE ")) continue;
    const size_t space = line.rfind(' ');
    double v = 0;
    EXPECT_NE(space, absl::string_view::npos) << line;
    if (space == absl::string_view::npos) continue;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(space + 1), &v)) << line;
    const absl::string_view name = line.substr(0, space);
    EXPECT_TRUE(name.find('{') == absl::string_view::npos || absl::EndsWith(name, "}")) << line;
    series[std::string(name)] = v;
  }
  return series;
}

TEST_F(LibvirtTest, TheDaemonServesPerVmMetricsAndReloadsOnSighup) {
  LibvirtDomain dom = Domain("memfd");
  const std::vector<int> original = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(0, original, HostCpus()).ok());
  const int port = 19000 + getpid() % 1000;
  testing::TempFile config("daemon.toml", "[daemon]\nbalance = \"on\"\ninterval = \"200ms\"\n");
  BackgroundNumavm daemon({"daemon", "--config", config.path(), "--connect", LibvirtEnv::uri(),
                           "--domain", dom.name(), "--metrics-port", absl::StrCat(port),
                           "--override-pinning"});
  httplib::Client client("127.0.0.1", port);
  std::map<std::string, double> metrics;
  std::string exposition;
  const std::string labels =
      absl::StrCat("{domain=\"", dom.name(), "\",uuid=\"", dom.uuid(), "\",kind=\"libvirt\"}");
  ASSERT_TRUE(Eventually([&] {
    auto res = client.Get("/metrics");
    if (!res || res->status != 200) return false;
    metrics = ParsePrometheus(res->body);
    exposition = res->body;
    return metrics.count("numavm_vm_vcpus" + labels) > 0 && metrics["numavm_rounds_total"] >= 1;
  })) << daemon.err();
  // Named and shaped as Prometheus wants them.
  EXPECT_EQ(testing::PrometheusLintProblems(exposition), "") << exposition;
  EXPECT_EQ(metrics["numavm_vm_vcpus" + labels], 2);
  EXPECT_EQ(metrics["numavm_vm_memory_bytes" + labels], double(uint64_t{kMemoryMib} << 20));
  EXPECT_EQ(metrics[absl::StrCat("numavm_vm_node_memory_bytes{domain=\"", dom.name(), "\",uuid=\"",
                                 dom.uuid(), "\",kind=\"libvirt\",node=\"0\"}")],
            double(uint64_t{kMemoryMib} << 20));
  EXPECT_EQ(metrics["numavm_vm_placement_locality_ratio" + labels], 1.0);
  EXPECT_TRUE(metrics.count("numavm_vm_pages_migrated_total" + labels));
  // The daemon's own health, and the host's other NUMA balancer as it is.
  EXPECT_EQ(metrics["numavm_up"], 1);
  EXPECT_EQ(metrics["numavm_domains_attached"], 1);
  EXPECT_EQ(metrics["numavm_domains_skipped"], 0) << "--domain names only this one";
  EXPECT_EQ(metrics["numavm_round_errors_total"], 0);
  EXPECT_EQ(metrics["numavm_build_info{version=\"0.1.0\"}"], 1);
  const std::string kernel = ReadProcFile("/proc/sys/kernel/numa_balancing");
  EXPECT_EQ(metrics["numavm_host_kernel_numa_balancing"], kernel.empty() ? -1 : std::stoi(kernel));
  ASSERT_TRUE(Eventually([&] { return Pinning(dom)[0] == AllCpus(); })) << daemon.err();

  // SIGHUP: a broken config is refused and the old one kept; a good one is
  // taken.
  { std::ofstream(config.path()) << "[daemon]\nbalance = \"sideways\"\n"; }
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return daemon.err().find("config not reloaded") != std::string::npos;
  })) << daemon.err();
  { std::ofstream(config.path()) << "[daemon]\nbalance = \"advise\"\ninterval = \"200ms\"\n"; }
  daemon.Signal(SIGHUP);
  ASSERT_TRUE(Eventually([&] {
    return daemon.err().find("config reloaded (balance advise") != std::string::npos;
  })) << daemon.err();
  nlohmann::json report = ReportJson();
  ASSERT_NE(Find(report, dom.name()), nullptr);
  EXPECT_EQ((*Find(report, dom.name()))["mode"], "advise");

  daemon.Signal(SIGTERM);
  ProcessResult done = daemon.Wait(30);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(Pinning(dom)[0], original);
  ASSERT_TRUE(dom.Destroy().ok());
}

// libvirtd restarts (package upgrades do that) while the daemon balances:
// it reconnects, keeps the domain, and SIGTERM still puts back the pinning
// the domain had before numavm touched it - not numavm's own.
TEST_F(LibvirtTest, TheDaemonRidesOutALibvirtdRestartAndStillRestoresTheOriginalPinning) {
  LibvirtDomain dom = Domain("memfd");
  const std::string name = dom.name();
  const std::vector<int> original = {HostCpus() - 1};
  ASSERT_TRUE(dom.PinVcpu(0, original, HostCpus()).ok());
  BackgroundNumavm daemon({"daemon", "--connect", LibvirtEnv::uri(), "--domain", name, "--interval",
                           "200ms", "--metrics-port", "0", "--override-pinning"});
  ASSERT_TRUE(Eventually([&] { return Pinning(dom)[0] == AllCpus(); })) << daemon.err();

  absl::Status restarted = LibvirtEnv::RestartLibvirtd();
  if (absl::IsFailedPrecondition(restarted)) GTEST_SKIP() << restarted.message();
  ASSERT_TRUE(restarted.ok()) << restarted;
  absl::StatusOr<LibvirtDomain> again = LibvirtEnv::connection().Lookup(name);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->active()) << "libvirtd's restart must not stop the domain";
  ASSERT_TRUE(Eventually(
      [&] { return daemon.err().find("reconnected to libvirt") != std::string::npos; }, 60))
      << daemon.err();
  EXPECT_EQ(daemon.err().find("no longer balanced"), std::string::npos) << daemon.err();
  nlohmann::json report = ReportJson();
  const nlohmann::json* vm = Find(report, name);
  ASSERT_NE(vm, nullptr) << report.dump();
  EXPECT_EQ((*vm)["mode"], "on");

  daemon.Signal(SIGTERM);
  ProcessResult done = daemon.Wait(30);
  EXPECT_EQ(done.exit_code, 0) << done.err;
  EXPECT_EQ(Pinning(*again)[0], original) << done.err;
  ASSERT_TRUE(again->Destroy().ok());
}

}  // namespace
}  // namespace numavm

int main(int argc, char** argv) {
  // As in numavm: libvirt's client writes to a socket libvirtd may have
  // closed (the restart test); that must be an error, not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new numavm::testing::LibvirtEnv);
  return RUN_ALL_TESTS();
}
