// `numavm daemon`: balances all (or the configured) libvirt domains
// continuously, serves Prometheus metrics and a control socket, reloads its
// config on SIGHUP.
#include <httplib.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "balancer/control/control_socket.h"
#include "balancer/host_numa_peers.h"
#include "balancer/libvirt/domain_manager.h"
#include "cli/daemon_config.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/report_envelope.h"
#include "cli/run_options.h"
#include "cli/service_loop.h"
#include "cli/systemd_notify.h"

namespace numavm {
namespace {

void Log(const std::string& line) {
  std::fprintf(stderr, "numavm daemon: %s\n", line.c_str());
  std::fflush(stderr);
}

// The daemon's own series, before the per-VM ones: that it is up, which
// numavm it is, how many domains it balances, and whether the kernel's
// NUMA balancing (a second balancer) is on.
std::string DaemonHealth(const DomainManager& manager) {
  const HostNumaPeers peers = DetectHostNumaPeers();
  auto family = [](const char* name, const char* type, const char* help) {
    return absl::StrCat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
  };
  std::string out = absl::StrCat(
      family("numavm_up", "gauge", "1 while the daemon serves."), "numavm_up 1\n",
      family("numavm_build_info", "gauge", "The numavm version serving."),
      "numavm_build_info{version=\"", kNumavmVersion, "\"} 1\n",
      family("numavm_rounds_total", "counter", "Balancing rounds run."), "numavm_rounds_total ",
      manager.rounds(), "\n",
      family("numavm_round_errors_total", "counter",
             "Rounds' errors: libvirt unreachable, a domain's step failing (see the log)."),
      "numavm_round_errors_total ", manager.round_errors(), "\n",
      family("numavm_domains_attached", "gauge", "Domains the daemon balances."),
      "numavm_domains_attached ", manager.Attached().size(), "\n");
  const std::map<std::string, std::string> skipped = manager.Skipped();
  absl::StrAppend(
      &out,
      family("numavm_domains_skipped", "gauge", "Running domains the daemon could not attach."),
      "numavm_domains_skipped ", skipped.size(), "\n",
      family("numavm_domain_skipped_info", "gauge",
             "1 per running domain the daemon could not attach, with the reason."));
  auto label = [](const std::string& v) {
    return absl::StrReplaceAll(v, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
  };
  for (const auto& [name, why] : skipped) {
    absl::StrAppend(&out, "numavm_domain_skipped_info{domain=\"", label(name), "\",reason=\"",
                    label(why), "\"} 1\n");
  }
  absl::StrAppend(&out,
                  family("numavm_host_kernel_numa_balancing", "gauge",
                         "kernel.numa_balancing (0 off; -1 absent)."),
                  "numavm_host_kernel_numa_balancing ", peers.kernel_numa_balancing.value_or(-1),
                  "\n", family("numavm_host_numad_running", "gauge", "1 if a numad process runs."),
                  "numavm_host_numad_running ", peers.numad_pids.empty() ? 0 : 1, "\n");
  return out;
}

// The /metrics endpoint, on its own thread.
class MetricsServer {
 public:
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& address, int port,
                                                              DomainManager& manager) {
    auto m = std::unique_ptr<MetricsServer>(new MetricsServer);
    m->server_.Get("/metrics", [&manager](const httplib::Request&, httplib::Response& res) {
      res.set_content(DaemonHealth(manager) + ReportsToPrometheus(manager.Reports()),
                      "text/plain; version=0.0.4");
    });
    m->server_.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("numavm daemon: metrics at /metrics\n", "text/plain");
    });
    if (!m->server_.bind_to_port(address.c_str(), port)) {
      return absl::UnavailableError(
          absl::StrCat("cannot listen on ", address, ":", port, " for metrics"));
    }
    m->address_ = absl::StrCat(address, ":", port);
    m->thread_ = std::thread([s = &m->server_] { s->listen_after_bind(); });
    return m;
  }
  ~MetricsServer() {
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }
  const std::string& address() const { return address_; }

 private:
  MetricsServer() = default;
  httplib::Server server_;
  std::thread thread_;
  std::string address_;
};

}  // namespace

int DaemonCommand(const DaemonFlags& flags) {
  absl::StatusOr<DaemonConfig> config = ResolveDaemonConfig(flags);
  if (!config.ok()) {
    std::fprintf(stderr, "numavm daemon: %s\n", std::string(config.status().message()).c_str());
    return kExitBadInput;
  }
  absl::Duration duration = absl::InfiniteDuration();
  if (!flags.duration.empty()) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(flags.duration);
    if (!d.ok()) {
      std::fprintf(stderr, "numavm daemon: --duration: %s\n",
                   std::string(d.status().message()).c_str());
      return kExitBadInput;
    }
    duration = *d;
  }
  SignalWaiter signals;  // before any thread starts
  ManagerOptions options;
  options.uri = config->connect;
  options.domain.mode = config->mode;
  options.domain.override_pinning = config->override_pinning;
  options.domain.runtime_dir = RuntimeDir();
  if (absl::Status s = EnsureRuntimeDir(options.domain.runtime_dir); !s.ok()) {
    std::fprintf(stderr, "numavm daemon: %s\n", std::string(s.message()).c_str());
    return kExitHostError;
  }
  options.migrate_bytes_per_second = config->migrate_bytes_per_second;
  options.manager_name = "numavm daemon";
  DomainManager manager(HostTopologyOrOneNode("numavm daemon"), options, Log);
  if (absl::Status s = manager.Connect(); !s.ok()) {
    Log(absl::StrCat(s.message(), " (retrying every interval)"));
  }

  std::unique_ptr<MetricsServer> metrics;
  auto start_metrics = [&](const DaemonConfig& c) {
    metrics.reset();
    if (c.metrics_port == 0) return;
    absl::StatusOr<std::unique_ptr<MetricsServer>> m =
        MetricsServer::Start(c.metrics_address, c.metrics_port, manager);
    if (!m.ok()) {
      Log(std::string(m.status().message()));
      return;
    }
    metrics = std::move(*m);
    Log(absl::StrCat("metrics at http://", metrics->address(), "/metrics"));
  };
  start_metrics(*config);
  if (config->metrics_port != 0 && metrics == nullptr) return kExitHostError;

  std::atomic<bool> detached_all{false};
  absl::StatusOr<std::unique_ptr<ControlServer>> control = ControlServer::Start(
      RuntimeDir(), absl::StrCat("daemon-", getpid()), [&](const std::string& request) {
        return HandleControlRequest(manager, "numavm daemon", request, &detached_all);
      });
  if (control.ok()) {
    Log(absl::StrCat("control socket ", (*control)->path()));
  } else {
    Log(absl::StrCat("no control socket: ", control.status().message()));
  }
  for (const std::string& w : HostNumaPeerWarnings(DetectHostNumaPeers())) Log("note: " + w);
  // Under systemd (Type=notify): serving now.
  auto notify = [](absl::string_view state) {
    if (absl::Status s = NotifySystemd(state); !s.ok()) Log(std::string(s.message()));
  };
  notify("READY=1\nSTATUS=balancing libvirt domains");

  const absl::Time start = absl::Now();
  const absl::Time end =
      duration == absl::InfiniteDuration() ? absl::InfiniteFuture() : start + duration;
  int exit_code = kExitOk;
  for (;;) {
    if (!detached_all) manager.AttachNew(config->domains);
    manager.Step(absl::Now() - start);
    const absl::Duration wait = std::min(config->interval, end - absl::Now());
    if (wait <= absl::ZeroDuration()) break;
    const int sig = signals.Wait(wait);
    if (sig == SIGINT || sig == SIGTERM) {
      Log(sig == SIGINT ? "interrupted" : "terminated");
      if (sig == SIGINT) exit_code = kExitInterrupted;
      break;
    }
    if (sig == SIGHUP) {
      notify("RELOADING=1");
      absl::StatusOr<DaemonConfig> fresh = ResolveDaemonConfig(flags);
      if (!fresh.ok()) {
        Log(absl::StrCat("SIGHUP: config not reloaded, keeping the old one: ",
                         fresh.status().message()));
        notify("READY=1\nSTATUS=config not reloaded; balancing with the old one");
        continue;
      }
      manager.set_mode(fresh->mode);
      manager.set_migrate_rate(fresh->migrate_bytes_per_second);
      if (fresh->metrics_address != config->metrics_address ||
          fresh->metrics_port != config->metrics_port) {
        start_metrics(*fresh);
      }
      if (fresh->connect != config->connect) Log("SIGHUP: a new connect URI needs a restart");
      *config = *fresh;
      detached_all = false;
      Log(absl::StrCat("SIGHUP: config reloaded (balance ", BalanceModeName(fresh->mode),
                       ", every ", absl::FormatDuration(config->interval), ", domains: ",
                       config->domains.empty() ? "all" : absl::StrJoin(config->domains, ","), ")"));
      notify("READY=1\nSTATUS=balancing libvirt domains");
    }
    if (absl::Now() >= end) break;
  }
  notify("STOPPING=1\nSTATUS=restoring vCPU pinning");
  manager.DetachAll();
  Log("stopped; vCPU pinning of every domain restored");
  return exit_code;
}

}  // namespace numavm
