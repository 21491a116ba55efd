// The options of `numavm attach`, `detach`, `daemon` and `report`.
#include <CLI/CLI.hpp>
#include <string>

#include "absl/strings/str_join.h"
#include "cli/command_line.h"
#include "cli/exit_codes.h"
#include "cli/shared_flags.h"

namespace numavm {

void AddAttachCommands(CLI::App& app, AttachFlags& attach, DetachFlags& detach) {
  CLI::App* a = app.add_subcommand(
      "attach",
      "Balance running libvirt domains from outside until Ctrl-C, SIGTERM or 'numavm "
      "detach': give each domain - each of its guest NUMA cells, if it has them - a home "
      "node (where its memory is and its vCPUs fit, as ESXi does), pin its vCPUs to the "
      "home node's CPUs (virDomainPinVcpu) and migrate its RAM there (move_pages on the "
      "QEMU process, region by region, by the balancer of 'numavm run') under a rate "
      "limit. Detaching restores the vCPU pinning found at attach; migrated memory "
      "stays.");
  a->footer(
      std::string("\nThe QEMU process (by the domain's UUID on its command line) and its "
                  "guest RAM mapping are found in /proc, never through QMP passthrough (which "
                  "marks a domain tainted); memfd and anonymous RAM both work. "
                  "A domain that shuts down is dropped with a message; the others go on.\n"
                  "Examples:\n  numavm attach web1 web2 --balance advise\n"
                  "  numavm attach --all --connect qemu:///system --interval 10s\n\n") +
      kAttachExitHelp);
  a->add_option("domains", attach.domains, "libvirt domain names");
  a->add_flag("--all", attach.all, "every running domain");
  a->add_option("--connect", attach.connect,
                "libvirt URI (default: libvirt's default, qemu:///system for root)")
      ->type_name("URI");
  AddBalanceFlag(a, &attach.balance,
                 "on (default: pin vCPUs to the home node and move memory there), "
                 "advise (say what would be done, change nothing) or off (measure "
                 "only)");
  a->add_option("--mode", attach.balance, "the old name of --balance (enforce: on)")->group("");
  AddDurationOption(a, "--interval", &attach.interval,
                    "time between balancing rounds (default 5s)");
  AddSizeOption(a, "--migrate-rate", &attach.migrate_rate,
                "page migration limit per second for all attached domains together "
                "(default 64M)");
  AddDurationFlag(a, &attach.duration,
                  "detach by itself after this long, e.g. 10m (default: run until "
                  "stopped)");
  AddReportFlags(a, &attach.report, "final report format");
  a->add_flag("--override-pinning", attach.override_pinning,
              "take over the placement the administrator set (vCPUs pinned by <vcpupin> or "
              "<vcpu cpuset>, memory bound by <numatune> or <memnode>); default: balance "
              "within it (homes on the allowed nodes, vCPUs pinned only within their CPUs), "
              "and leave alone what cannot be (interleaved memory)");

  CLI::App* d =
      app.add_subcommand("detach",
                         "Tell the numavm process balancing a libvirt domain to let it go; its "
                         "vCPU pinning is restored. A domain whose numavm died (kill -9, a "
                         "crash) gets the pinning that numavm saved back.");
  d->footer(
      "\nExit status: 0 detached or its saved pinning restored (or, with --all, nothing was "
      "attached); 2 a named domain is not attached by any numavm process and has no saved "
      "pinning; 5 a numavm process did not answer or could not detach, or a saved pinning "
      "could not be restored.\nExample: numavm detach web1\n");
  d->add_option("domains", detach.domains, "libvirt domain names");
  d->add_flag("--all", detach.all, "every domain any numavm process has attached");
  d->add_option("--connect", detach.connect,
                "libvirt URI, to restore pinning left by a numavm that died (default: "
                "libvirt's default)")
      ->type_name("URI");
}

void AddDaemonCommand(CLI::App& app, DaemonFlags& flags) {
  CLI::App* d = app.add_subcommand(
      "daemon",
      "Balance every running libvirt domain (or the configured ones) continuously, as "
      "'numavm attach --all' does, picking up domains as they start; serve Prometheus "
      "metrics over HTTP and a control socket for 'numavm report'. SIGHUP reloads the "
      "config; SIGTERM restores every domain's vCPU pinning and exits.");
  d->footer(
      std::string(
          "\nConfig (TOML, see configs/numavm-daemon.toml): [daemon] connect, balance, interval, "
          "migrate_rate, domains, override_pinning; [metrics] address (default 127.0.0.1), port "
          "(default 9464, 0: off). Flags override it. A systemd unit is in "
          "configs/numavm.service (man numavm).\n"
          "Example: numavm daemon --config /etc/numavm/daemon.toml\n"
          "         curl -s http://127.0.0.1:9464/metrics\n\n") +
      kDaemonExitHelp);
  d->add_option("-c,--config", flags.config_path, "TOML config file")->check(CLI::ExistingFile);
  d->add_option("--connect", flags.connect, "libvirt URI")->type_name("URI");
  AddBalanceFlag(d, &flags.balance, "on (default), advise or off, as in 'numavm attach'");
  d->add_option("--mode", flags.balance, "the old name of --balance (enforce: on)")->group("");
  AddDurationOption(d, "--interval", &flags.interval, "time between balancing rounds (default 5s)");
  AddSizeOption(d, "--migrate-rate", &flags.migrate_rate,
                "page migration limit per second for all domains together (default 64M)");
  d->add_option("--domain", flags.domains, "balance only this domain (repeat); default: all")
      ->type_name("NAME")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  d->add_option("--metrics-address", flags.metrics_address,
                "address for /metrics (default 127.0.0.1: loopback only)")
      ->type_name("ADDRESS");
  d->add_option("--metrics-port", flags.metrics_port, "port for /metrics (default 9464; 0: none)")
      ->type_name("PORT");
  AddDurationFlag(d, &flags.duration, "stop after this long (default: run until stopped)");
  d->add_flag("--override-pinning", flags.override_pinning,
              "take over the placement the administrator set, as in 'numavm attach'");
}

void AddReportCommand(CLI::App& app, ReportFlags& flags) {
  CLI::App* r = app.add_subcommand(
      "report",
      "Locality of every VM on this host: bundled 'numavm run' VMs, domains balanced by "
      "'numavm attach' or 'numavm daemon' (through their control sockets) and every other "
      "running libvirt domain (measured, not touched): memory and vCPUs per node, placement "
      "locality, sampled access locality, pages and bytes migrated, vCPU moves, balancer "
      "CPU time.");
  r->footer(
      "\nPlacement locality is the share of accesses that would be local if every vCPU used "
      "all of the VM's memory alike. Control sockets live in $NUMAVM_RUNTIME_DIR (default "
      "/run/numavm for root).\nExamples:\n  numavm report\n  numavm report --report json\n"
      "  numavm report --watch 2\n\n" +
      std::string(kReportExitHelp));
  AddReportFlags(r, &flags.report, "report format");
  AddDurationOption(
      r, "--watch", &flags.watch,
      "print again every DURATION until Ctrl-C (seconds, or e.g. 5s, 500ms; at least 100ms)");
  r->add_option("--connect", flags.connect, "libvirt URI (default: libvirt's default)")
      ->type_name("URI");
  r->add_flag("--no-libvirt", flags.no_libvirt, "only numavm processes, do not ask libvirt");
}

}  // namespace numavm
