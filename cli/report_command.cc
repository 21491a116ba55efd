// `numavm report`: every numavm VM and every libvirt domain on this host.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "balancer/control/control_client.h"
#include "balancer/control/control_socket.h"
#include "balancer/host_numa_peers.h"
#include "balancer/libvirt/attached_domain.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/report_envelope.h"
#include "cli/run_options.h"
#include "cli/service_loop.h"

namespace numavm {
namespace {

struct Collected {
  std::vector<VmReport> vms;
  std::vector<std::string> notes;
};

// From the control sockets of running numavm processes.
void FromNumavmProcesses(Collected& out) {
  for (const std::string& w : HostNumaPeerWarnings(DetectHostNumaPeers())) out.notes.push_back(w);
  absl::StatusOr<std::vector<std::string>> sockets = ListControlSockets(RuntimeDir());
  if (!sockets.ok()) {
    out.notes.push_back(std::string(sockets.status().message()));
    return;
  }
  for (const std::string& socket : *sockets) {
    absl::StatusOr<PeerReport> peer = RequestReport(socket);
    if (absl::IsNotFound(peer.status())) {
      UnlinkStaleSocket(socket);  // its process is gone
      continue;
    }
    if (!peer.ok()) {
      out.notes.push_back(absl::StrCat(socket, ": ", peer.status().message()));
      continue;
    }
    for (VmReport& r : peer->vms) out.vms.push_back(std::move(r));
    for (const std::string& p : peer->problems) out.notes.push_back(absl::StrCat(socket, ": ", p));
  }
}

// Domains no numavm process balances: measured once, touched not at all.
void FromLibvirt(const ReportFlags& flags, const Topology& topology, Collected& out) {
  absl::StatusOr<LibvirtConnection> conn = LibvirtConnection::Open(flags.connect);
  if (!conn.ok()) {
    if (!flags.connect.empty()) out.notes.push_back(std::string(conn.status().message()));
    return;
  }
  absl::StatusOr<std::vector<LibvirtDomain>> domains = conn->ActiveDomains();
  if (!domains.ok()) {
    out.notes.push_back(std::string(domains.status().message()));
    return;
  }
  for (LibvirtDomain& d : *domains) {
    const std::string name = d.name();
    bool managed = false;
    for (const VmReport& r : out.vms) managed |= r.kind == "libvirt" && r.name == name;
    if (managed) continue;
    absl::StatusOr<std::unique_ptr<AttachedDomain>> a =
        AttachedDomain::Attach(*conn, std::move(d), topology, {BalanceMode::kOff});
    if (!a.ok()) {
      out.notes.push_back(absl::StrCat(name, ": ", a.status().message()));
      continue;
    }
    // Attach measured it (placement only): nothing more to do to report it.
    VmReport r = (*a)->report();
    r.manager = "none";
    r.mode = "off";
    r.status = "not balanced";
    out.vms.push_back(std::move(r));
  }
}

void Print(const ReportFlags& flags, const Collected& c) {
  if (flags.report == "json") {
    nlohmann::json j = {{"vms", nlohmann::json::array()}, {"notes", c.notes}};
    for (const VmReport& r : c.vms) j["vms"].push_back(ToJson(r));
    std::cout << WithReportEnvelope("report", std::move(j)).dump(2) << std::endl;
    return;
  }
  if (c.vms.empty()) {
    std::cout << "no numavm VMs or libvirt domains running\n";
  } else {
    std::cout << ReportsToTable(c.vms);
  }
  for (const std::string& n : c.notes) std::cout << "note: " << n << "\n";
  std::cout << std::flush;
}

}  // namespace

int ReportCommand(const ReportFlags& flags) {
  absl::Duration every = absl::ZeroDuration();  // zero: once
  if (!flags.watch.empty()) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(flags.watch);
    if (!d.ok() || *d < kMinPrintInterval) {
      std::fprintf(stderr, "numavm report: --watch: %s\n",
                   d.ok()
                       ? absl::StrCat("at least ", absl::FormatDuration(kMinPrintInterval)).c_str()
                       : std::string(d.status().message()).c_str());
      return kExitBadInput;
    }
    every = *d;
  }
  SignalWaiter signals;
  const Topology topology = HostTopologyOrOneNode("numavm report");
  for (;;) {
    Collected c;
    FromNumavmProcesses(c);
    if (!flags.no_libvirt) FromLibvirt(flags, topology, c);
    if (every > absl::ZeroDuration() && flags.report != "json") {
      std::cout << "\n"
                << absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::Now(), absl::LocalTimeZone())
                << "\n";
    }
    Print(flags, c);
    if (every == absl::ZeroDuration()) return kExitOk;
    int sig = signals.Wait(every);
    if (sig == SIGINT || sig == SIGTERM) return kExitOk;
  }
}

}  // namespace numavm
