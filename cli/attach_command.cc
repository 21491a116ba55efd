// `numavm attach` and `numavm detach`.
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/control/control_client.h"
#include "balancer/control/control_socket.h"
#include "balancer/libvirt/domain_manager.h"
#include "base/size.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/run_options.h"
#include "cli/service_loop.h"

namespace numavm {
namespace {

int Fail(const char* who, const absl::Status& s, int code = kExitBadInput) {
  std::fprintf(stderr, "numavm %s: %s\n", who, std::string(s.message()).c_str());
  return code;
}

void Log(const std::string& line) { std::fprintf(stderr, "numavm attach: %s\n", line.c_str()); }

}  // namespace

int AttachCommand(const AttachFlags& flags) {
  if (flags.all == !flags.domains.empty()) {
    return Fail("attach", absl::InvalidArgumentError("name the domains to attach, or give --all"));
  }
  absl::StatusOr<DomainMode> mode = ParseDomainMode(flags.mode);
  if (!mode.ok()) return Fail("attach", mode.status());
  absl::StatusOr<absl::Duration> interval = ParseTimeout(flags.interval);
  if (!interval.ok() || *interval < absl::Milliseconds(100)) {
    return Fail("attach", absl::InvalidArgumentError(absl::StrCat(
                              "--interval '", flags.interval, "': want e.g. 5s, at least 100ms")));
  }
  absl::StatusOr<uint64_t> rate = ParseSize(flags.migrate_rate);
  if (!rate.ok() || *rate == 0) {
    return Fail("attach", absl::InvalidArgumentError(absl::StrCat(
                              "--migrate-rate '", flags.migrate_rate, "': want e.g. 64M")));
  }
  absl::Duration duration = absl::InfiniteDuration();
  if (!flags.duration.empty()) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(flags.duration);
    if (!d.ok()) return Fail("attach", d.status());
    duration = *d;
  }
  if (flags.report != "table" && flags.report != "json") {
    return Fail("attach", absl::InvalidArgumentError("--report: want table or json"));
  }

  SignalWaiter signals;  // before any thread starts
  ManagerOptions options;
  options.uri = flags.connect;
  options.domain.mode = *mode;
  options.migrate_bytes_per_second = *rate;
  options.manager_name = "numavm attach";
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
  Log(absl::StrCat("attached ", absl::StrJoin(manager.Attached(), ", "), " (", flags.mode,
                   ", every ", absl::FormatDuration(*interval),
                   "); Ctrl-C or 'numavm detach' restores their vCPU pinning"));

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
  std::vector<VmReport> reports = manager.Reports();
  manager.DetachAll();
  for (VmReport& r : reports) r.status = "detached (vCPU pinning restored)";
  if (flags.report == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const VmReport& r : reports) j.push_back(ToJson(r));
    std::cout << j.dump(2) << std::endl;
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
  for (const std::string& name : pending) {
    std::fprintf(stderr, "numavm detach: no numavm process has '%s' attached\n", name.c_str());
  }
  if (failed > 0) return kExitHostError;
  if (!pending.empty()) return kExitBadInput;
  if (flags.all && detached == 0) std::printf("nothing was attached\n");
  return kExitOk;
}

}  // namespace numavm
