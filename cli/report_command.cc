// `numavm report`: every numavm VM and every libvirt domain on this host.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "balancer/control/control_socket.h"
#include "balancer/libvirt/attached_domain.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/service_loop.h"

namespace numavm {
namespace {

struct Collected {
  std::vector<VmReport> vms;
  std::vector<std::string> notes;
};

// From the control sockets of running numavm processes.
void FromNumavmProcesses(Collected& out) {
  const std::string dir = RuntimeDir();
  for (const std::string& socket : ListControlSockets(dir)) {
    absl::StatusOr<std::string> reply = ControlRequest(socket, "report");
    if (absl::IsNotFound(reply.status())) {
      unlink(socket.c_str());  // its process is gone
      continue;
    }
    if (!reply.ok()) {
      out.notes.push_back(absl::StrCat(socket, ": ", reply.status().message()));
      continue;
    }
    nlohmann::json j = nlohmann::json::parse(*reply, nullptr, false);
    if (j.is_discarded() || !j.contains("vms") || !j["vms"].is_array()) {
      out.notes.push_back(absl::StrCat(socket, ": not a numavm report"));
      continue;
    }
    for (const auto& v : j["vms"]) {
      absl::StatusOr<VmReport> r = VmReportFromJson(v);
      if (r.ok()) {
        out.vms.push_back(std::move(*r));
      } else {
        out.notes.push_back(absl::StrCat(socket, ": ", r.status().message()));
      }
    }
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
        AttachedDomain::Attach(*conn, std::move(d), topology, {DomainMode::kAdvise});
    if (!a.ok()) {
      out.notes.push_back(absl::StrCat(name, ": ", a.status().message()));
      continue;
    }
    absl::Status s = (*a)->Observe();
    VmReport r = (*a)->report();
    r.manager = "none";
    r.mode = "off";
    r.status = s.ok() ? "not balanced" : std::string(s.message());
    out.vms.push_back(std::move(r));
  }
}

void Print(const ReportFlags& flags, const Collected& c) {
  if (flags.json) {
    nlohmann::json j = {{"vms", nlohmann::json::array()}, {"notes", c.notes}};
    for (const VmReport& r : c.vms) j["vms"].push_back(ToJson(r));
    std::cout << j.dump(2) << std::endl;
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
  if (flags.watch_seconds < 0) {
    std::fprintf(stderr, "numavm report: --watch wants a positive number of seconds\n");
    return kExitBadInput;
  }
  SignalWaiter signals;
  const Topology topology = HostTopologyOrOneNode("numavm report");
  for (;;) {
    Collected c;
    FromNumavmProcesses(c);
    if (!flags.no_libvirt) FromLibvirt(flags, topology, c);
    if (flags.watch_seconds > 0 && !flags.json) {
      std::cout << "\n" << absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::Now(), absl::LocalTimeZone())
                << "\n";
    }
    Print(flags, c);
    if (flags.watch_seconds == 0) return kExitOk;
    int sig = signals.Wait(absl::Seconds(flags.watch_seconds));
    if (sig == SIGINT || sig == SIGTERM) return kExitOk;
  }
}

}  // namespace numavm
