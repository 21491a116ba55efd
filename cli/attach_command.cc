// `numavm attach` and `numavm detach`.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/control/control_client.h"
#include "balancer/control/control_socket.h"
#include "balancer/host_numa_peers.h"
#include "balancer/libvirt/domain_manager.h"
#include "balancer/libvirt/pinning_record.h"
#include "balancer/libvirt/qemu_process.h"
#include "base/size.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/report_envelope.h"
#include "cli/run_options.h"
#include "cli/service_loop.h"

namespace numavm {
namespace {

int Fail(const char* who, const absl::Status& s, int code = kExitBadInput) {
  std::fprintf(stderr, "numavm %s: %s\n", who, std::string(s.message()).c_str());
  return code;
}

void Log(const std::string& line) { std::fprintf(stderr, "numavm attach: %s\n", line.c_str()); }

// Puts back the pinning a dead numavm saved, if the domain still runs in
// the same QEMU process (a restarted domain has libvirt's pinning again).
absl::Status RestoreSavedPinning(const SavedPinning& saved, const std::string& uri) {
  absl::StatusOr<LibvirtConnection> conn = LibvirtConnection::Open(uri);
  if (!conn.ok()) return conn.status();
  absl::StatusOr<LibvirtDomain> dom = conn->Lookup(saved.name);
  if (dom.ok() && dom->uuid() == saved.uuid && dom->active()) {
    absl::StatusOr<pid_t> qemu = FindQemuProcess(saved.uuid);
    if (qemu.ok() && *qemu == saved.qemu_pid) {
      for (int v = 0; v < static_cast<int>(saved.pinning.size()); ++v) {
        if (absl::Status s = dom->PinVcpu(v, saved.pinning[v], conn->host_cpus()); !s.ok()) {
          return s;
        }
      }
    }
  }
  // Restored, or nothing left to restore (gone, restarted): the record goes.
  return RemoveStaleRecord(RuntimeDir(), saved.uuid);
}

}  // namespace

int AttachCommand(const AttachFlags& flags) {
  if (flags.all == !flags.domains.empty()) {
    return Fail("attach", absl::InvalidArgumentError("name the domains to attach, or give --all"));
  }
  absl::StatusOr<BalanceMode> mode = ParseDomainBalance(flags.balance);
  if (!mode.ok()) {
    return Fail("attach",
                absl::InvalidArgumentError(absl::StrCat("--balance: ", mode.status().message())));
  }
  absl::StatusOr<absl::Duration> interval = ParseTimeout(flags.interval);
  if (!interval.ok() || *interval < absl::Milliseconds(100)) {
    return Fail("attach", absl::InvalidArgumentError(absl::StrCat(
                              "--interval: '", flags.interval, "': want e.g. 5s, at least 100ms")));
  }
  absl::StatusOr<uint64_t> rate = ParseMigrateRate("--migrate-rate", flags.migrate_rate);
  if (!rate.ok()) return Fail("attach", rate.status());
  absl::Duration duration = absl::InfiniteDuration();
  if (!flags.duration.empty()) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(flags.duration);
    if (!d.ok()) {
      return Fail("attach",
                  absl::InvalidArgumentError(absl::StrCat("--duration: ", d.status().message())));
    }
    duration = *d;
  }
  if (flags.report != "table" && flags.report != "json") {
    return Fail("attach", absl::InvalidArgumentError("--report: want table or json"));
  }

  SignalWaiter signals;  // before any thread starts
  ManagerOptions options;
  options.uri = flags.connect;
  options.domain.mode = *mode;
  options.domain.override_pinning = flags.override_pinning;
  options.domain.runtime_dir = RuntimeDir();
  if (absl::Status s = EnsureRuntimeDir(options.domain.runtime_dir); !s.ok()) {
    return Fail("attach", s, kExitHostError);
  }
  options.migrate_bytes_per_second = *rate;
  options.manager_name = "numavm attach";
  options.keep_released_reports = true;
  DomainManager manager(HostTopologyOrOneNode("numavm attach"), options, Log);
  if (absl::Status s = manager.Attach(flags.all ? std::vector<std::string>{} : flags.domains);
      !s.ok()) {
    return Fail("attach", s, absl::IsUnavailable(s) ? kExitHostError : kExitBadInput);
  }
  std::atomic<bool> detached_all{false};
  absl::StatusOr<std::unique_ptr<ControlServer>> control = ControlServer::Start(
      RuntimeDir(), absl::StrCat("attach-", getpid()), [&](const std::string& request) {
        return HandleControlRequest(manager, "numavm attach", request, &detached_all);
      });
  if (!control.ok())
    Log(absl::StrCat("no control socket (numavm report will not see this): ",
                     control.status().message()));
  Log(absl::StrCat("attached ", absl::StrJoin(manager.Attached(), ", "), " (--balance ",
                   BalanceModeName(*mode), ", every ", absl::FormatDuration(*interval),
                   "); Ctrl-C or 'numavm detach' restores their vCPU pinning"));
  for (const std::string& w : HostNumaPeerWarnings(DetectHostNumaPeers())) Log("note: " + w);

  const absl::Time start = absl::Now();
  const absl::Time end =
      duration == absl::InfiniteDuration() ? absl::InfiniteFuture() : start + duration;
  int exit_code = kExitOk;
  for (;;) {
    manager.Step(absl::Now() - start);
    if (detached_all || manager.Attached().empty()) {
      Log("nothing left attached");
      break;
    }
    const absl::Duration wait = std::min(*interval, end - absl::Now());
    if (wait <= absl::ZeroDuration()) break;
    if (int sig = signals.Wait(wait); sig == SIGINT || sig == SIGTERM) {
      if (sig == SIGINT) exit_code = kExitInterrupted;
      break;
    }
    if (absl::Now() >= end) break;
  }
  manager.DetachAll();
  // Every domain this process balanced: detached now, by 'numavm detach'
  // or gone before.
  const std::vector<VmReport> reports = manager.ReleasedReports();
  if (flags.report == "json") {
    nlohmann::json vms = nlohmann::json::array();
    for (const VmReport& r : reports) vms.push_back(ToJson(r));
    std::cout << WithReportEnvelope("attach", {{"vms", vms}}).dump(2) << std::endl;
  } else {
    std::cout << ReportsToTable(reports) << std::flush;
  }
  return exit_code;
}

int DetachCommand(const DetachFlags& flags) {
  if (flags.all == !flags.domains.empty()) {
    return Fail("detach", absl::InvalidArgumentError("name the domains to detach, or give --all"));
  }
  std::vector<std::string> pending = flags.domains;
  int detached = 0, failed = 0;
  absl::StatusOr<std::vector<std::string>> sockets = ListControlSockets(RuntimeDir());
  if (!sockets.ok()) return Fail("detach", sockets.status(), kExitHostError);
  for (const std::string& socket : *sockets) {
    absl::StatusOr<PeerReport> peer = RequestReport(socket);
    if (absl::IsNotFound(peer.status())) continue;  // a stale socket
    if (!peer.ok()) {
      // A process that cannot say what it balances may hold a domain asked for.
      std::fprintf(stderr, "numavm detach: %s: %s\n", socket.c_str(),
                   std::string(peer.status().message()).c_str());
      ++failed;
      continue;
    }
    for (const VmReport& vm : peer->vms) {
      if (vm.kind != "libvirt") continue;
      auto it = std::find(pending.begin(), pending.end(), vm.name);
      if (!flags.all && it == pending.end()) continue;
      if (absl::Status s = RequestDetach(socket, vm.name); s.ok()) {
        std::printf("detached %s (%s, pid %d)\n", vm.name.c_str(),
                    peer->process.empty() ? "?" : peer->process.c_str(), peer->pid);
        ++detached;
        if (it != pending.end()) pending.erase(it);
      } else {
        std::fprintf(stderr, "numavm detach: %s: %s\n", vm.name.c_str(),
                     std::string(s.message()).c_str());
        ++failed;
      }
    }
  }
  // Domains whose numavm is gone (kill -9, a crash) but whose original
  // pinning it saved: put that back here.
  for (const SavedPinning& saved : StaleRecords(RuntimeDir())) {
    auto it = std::find(pending.begin(), pending.end(), saved.name);
    if (!flags.all && it == pending.end()) continue;
    if (absl::Status s = RestoreSavedPinning(saved, flags.connect); s.ok()) {
      std::printf("restored the vCPU pinning of %s saved by numavm pid %d, which is gone\n",
                  saved.name.c_str(), saved.pid);
      ++detached;
    } else {
      std::fprintf(stderr, "numavm detach: %s: %s\n", saved.name.c_str(),
                   std::string(s.message()).c_str());
      ++failed;
    }
    if (it != pending.end()) pending.erase(it);
  }
  for (const std::string& name : pending) {
    std::fprintf(stderr, "numavm detach: no numavm process has '%s' attached\n", name.c_str());
  }
  if (failed > 0) return kExitHostError;
  if (!pending.empty()) return kExitBadInput;
  if (flags.all && detached == 0) std::printf("nothing was attached\n");
  return kExitOk;
}

}  // namespace numavm
