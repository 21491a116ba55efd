// numavm: a NUMA balancer for virtual machines.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "absl/strings/str_join.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/payload_path.h"
#include "cli/replay_command.h"
#include "cli/run_command.h"
#include "cli/simulate_command.h"

namespace {

constexpr const char* kDescription =
    "numavm - a NUMA balancer for virtual machines.\n"
    "Runs guest workloads on its own KVM-based VMM and balances them (run,\n"
    "replay), balances running libvirt domains from outside (attach, detach,\n"
    "daemon), and reports every VM's locality (report).";

void AddRunCommand(CLI::App& app, numavm::RunFlags& flags) {
  CLI::App* run =
      app.add_subcommand("run",
                         "Boot a guest-tools payload on the bundled KVM VMM, run it to the end, "
                         "and print a per-VM summary (workload result, elapsed time, per-vCPU "
                         "throughput, guest memory per host node).");
  run->footer(std::string("\nPayloads: ") + absl::StrJoin(numavm::AvailablePayloads(), ", ") +
              "\nPayload arguments (key=value after --): size=BYTES (working "
              "set, default all free guest memory), iterations=N, seconds=S "
              "(run for S seconds of guest time instead), vcpus=N (vCPUs that "
              "work).\n"
              "Example: numavm run --payload numa02 --vcpus 2 --memory 512M "
              "--report=json -- iterations=8\n\n" +
              numavm::kExitCodeHelp);
  run->add_option("-c,--config", flags.config_path,
                  "TOML file with [vm], [payload], [placement], [report] and "
                  "[[cell]] tables (see configs/); flags override it")
      ->check(CLI::ExistingFile);
  run->add_option("--vcpus", flags.vcpus, "number of vCPUs (1-64; default 1)");
  run->add_option("--memory", flags.memory,
                  "guest RAM, e.g. 512M or 4G (default 512M; at least 16M)");
  run->add_option("--backing", flags.backing,
                  "guest RAM backing: memfd (default; shared, trackable), anon, "
                  "hugetlb (2 MiB pages, must be reserved) or thp");
  run->add_option("--cell", flags.cells,
                  "guest NUMA cell SIZE:VCPUS, e.g. --cell 256M:0 --cell 256M:1; "
                  "repeat per cell; cells replace --memory")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("-p,--payload", flags.payload,
                  "guest-tools payload name or path to an ELF64 x86-64 payload "
                  "(default numa02)");
  run->add_option("--placement", flags.placement,
                  "none (default), hard (vCPUs pinned and memory bound to their "
                  "node, like autonuma-benchmark HARD_BIND) or inverse (memory on "
                  "another node, INVERSE_BIND)");
  run->add_option("--report", flags.report, "summary format: table (default) or json");
  run->add_option("--timeout", flags.timeout,
                  "stop the VM after this long, e.g. 30s or 5m (default: none)");
  run->add_flag("--quiet-console", flags.quiet_console,
                "do not echo guest console lines to stderr");
  run->add_option("--sampler", flags.sampler,
                  "access tracking: hint (default; userfaultfd hinting faults, sees reads "
                  "and writes, needs memfd or hugetlb backing; other backings fall back to "
                  "dirtylog), ring (per-vCPU dirty ring, writes), dirtylog (dirty-log "
                  "windows, writes, VM-wide) or off");
  run->add_option("--scan-stall-budget", flags.scan_stall_budget,
                  "share of the vCPUs' busy time the sampling faults may cost (default 1%); the "
                  "scan rate's ceiling");
  run->add_option("--scan-rate-min", flags.scan_rate_min,
                  "the scan rate's floor, guest memory per second, e.g. 16M (default: a "
                  "sixteenth of the ceiling)");
  run->add_option("--scan-rate-max", flags.scan_rate_max,
                  "the scan rate's ceiling, e.g. 1G (default: what the stall budget allows)");
  run->add_option("--scan-probes", flags.scan_probes,
                  "pages sampled per 2 MiB region and sweep (default 4; 1-512)");
  run->add_option("--scan-window", flags.scan_window,
                  "instead of regions at a controlled rate: arm this much guest memory per "
                  "scan period, every page of it, e.g. 64M (the fixed-window scanner)");
  run->add_option("--scan-period", flags.scan_period,
                  "time between scans, e.g. 1s or 100ms (default 1s; at least 10ms)");
  run->add_option("--scan-period-max", flags.scan_period_max,
                  "with --scan-window and --balance=on|advise the period adapts: twice as long "
                  "while accesses are >= 70% local and nothing moves, half as long below; this "
                  "is the longest (default 16 times --scan-period)");
  run->add_option("--dirty-ring-entries", flags.ring_entries,
                  "entries per vCPU dirty ring with --sampler=ring (power of two; default 16384)");
  run->add_option("--balance", flags.balance,
                  "off (default: measure locality, act on nothing), advise (print each "
                  "page decision with its reason, act on none) or on (migrate pages)");
  run->add_option("--migrate-rate", flags.migrate_rate,
                  "page migration limit per second for this VM, e.g. 256M (default 256M)");
  run->add_option("--host-migrate-rate", flags.host_migrate_rate,
                  "page migration limit per second shared by all 'numavm run' VMs on the host "
                  "(default 1G; 0: this VM's limit only)");
  run->add_option("--stats-interval", flags.stats_interval,
                  "print live counters on stderr this often, e.g. 1s (default: only at exit)");
  run->add_option("--placement-interval", flags.placement_interval,
                  "record where the payload's declared memory is this often, e.g. 5s "
                  "(placement_series in the JSON report: placement locality, guest bytes, "
                  "bytes per node)");
  run->add_flag("--migrate-churn", flags.migrate_churn,
                "integrity exercise: every scan period move all resident guest memory to the "
                "next node (round robin), within --migrate-rate, while the guest runs; run it "
                "with the verify payload (needs 2+ nodes with memory)");
  run->add_option("--record", flags.record,
                  "save the sampled access stream (vCPU, page, kind, time per period) to "
                  "FILE for 'numavm replay'");
  run->add_option("args", flags.payload_args, "payload arguments, key=value");
}

void AddReplayCommand(CLI::App& app, numavm::ReplayFlags& flags) {
  CLI::App* replay = app.add_subcommand(
      "replay",
      "Run a recorded access stream ('numavm run --record FILE') through the balancer "
      "against a placement model of a topology file, and compare the result with the "
      "best placement (each page on the node that accessed it most in the trace, vCPUs where "
      "they started) and the fewest page moves that reach it, by ground truth: the share of "
      "the trace's accesses that are local with pages where the model has them.");
  replay->footer(
      "\nThe model starts vCPUs in blocks over the nodes (as --placement=hard does) and "
      "first-touches memory on vCPU 0's node (boot) or where each page was first sampled "
      "(sampled).\n"
      "Example: numavm run --payload numa02 --vcpus 2 --memory 64M --scan-window 64M "
      "--scan-period 200ms --record numa02.trace -- seconds=20\n"
      "         numavm replay numa02.trace --topology configs/topology-4node.toml\n\n" +
      std::string(numavm::kReplayExitHelp));
  replay->add_option("trace", flags.trace_path, "trace file written by 'numavm run --record'")
      ->required()
      ->check(CLI::ExistingFile);
  replay
      ->add_option("-t,--topology", flags.topology_path,
                   "topology file (TOML; see configs/topology-*.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  replay->add_option("--report", flags.report, "table (default) or json");
  replay->add_option("--first-touch", flags.first_touch,
                     "where memory starts: boot (default; vCPU 0's node) or sampled (the node "
                     "of each page's first sample)");
  replay->add_option("--balance", flags.balance,
                     "on (default), advise or off (the model's locality without balancing)");
  replay->add_option("--migrate-rate", flags.migrate_rate,
                     "page migration limit per second in the model (default 256M)");
}

void AddSimulateCommand(CLI::App& app, numavm::SimulateFlags& flags) {
  CLI::App* sim = app.add_subcommand(
      "simulate",
      "Run the balancer in a closed loop with a model of a workload, of the sampler and of "
      "a topology's placement, at any size (up to 1 TiB and 256 vCPUs), deterministically "
      "for a seed; report ground-truth locality (the share of the workload's accesses that "
      "hit local memory) against the best placement (each page on the node whose vCPUs use "
      "it most, vCPUs where they started), time to 90% of it, pages moved against the "
      "fewest that reach it, re-migrations, sampling stall and balancer CPU.");
  sim->footer(
      "\nWorkloads: numa01, numa01_read, numa01_thread_alloc, numa02, numa02_read, numa02_smt, "
      "shared, phase, idle (the guest-tools shapes), groups (unequal vCPU groups: n=, "
      "sizes=1/3/4), handover (every slice passes to the next vCPU each every=, default half the "
      "run), drift "
      "(slices shift step=0.05 of a slice each every=10s), hot (hot= share of memory every "
      "vCPU writes, hot_share= of their accesses). Every workload takes size= (working set, "
      "default all), rate= (bytes per second per vCPU, default 4G), write= (share of "
      "writes), vcpus= (vCPUs that work); phase takes at= (default half the run).\n"
      "The model is described in docs/simulate.md.\n"
      "Example: numavm simulate --workload numa02 --vcpus 16 --memory 16G "
      "--topology configs/topology-2node-large.toml --seconds 300\n"
      "         numavm simulate --workload handover:every=30s --vcpus 8 --memory 4G "
      "--topology configs/topology-4node-large.toml --report json\n\n"
      "Exit status: 0 done; 2 bad input (flags, workload, topology, sizes).");
  sim->add_option("-w,--workload", flags.workload,
                  "NAME[:key=value,...], e.g. numa02 or groups:n=4 (default numa02)");
  sim->add_option("--vcpus", flags.vcpus, "vCPUs, 1-256 (default 4)");
  sim->add_option("--memory", flags.memory, "guest RAM, 16M to 1T (default 1G)");
  sim->add_option("-t,--topology", flags.topology_path,
                  "topology file (TOML; see configs/topology-*.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  sim->add_option("--seconds", flags.seconds, "simulated time, e.g. 600 or 10m (default 60)");
  sim->add_option("--seed", flags.seed, "seed of the sampler model (default 1)");
  sim->add_option("--first-touch", flags.first_touch,
                  "boot (default: all memory first touched from vCPU 0's node, spilling to the "
                  "nearest nodes) or spread (each page starts on its user's node)");
  sim->add_option("--fault-cost", flags.fault_cost,
                  "one hinting-fault round trip, charged to the faulting vCPU (default 55us, as "
                  "measured on the development machine; hardware: 7-40us)");
  sim->add_option("--report", flags.report, "table (default) or json");
  sim->add_option("--sampler", flags.sampler,
                  "hint (default), ring, dirtylog or off, as in 'numavm run'");
  sim->add_option("--balance", flags.balance, "on (default), advise or off");
  sim->add_option("--migrate-rate", flags.migrate_rate,
                  "page migration limit per second (default 256M)");
  sim->add_option("--scan-stall-budget", flags.scan_stall_budget,
                  "share of busy vCPU time sampling faults may cost (default 1%), as in 'numavm "
                  "run'");
  sim->add_option("--scan-rate-min", flags.scan_rate_min, "the scan rate's floor per second");
  sim->add_option("--scan-rate-max", flags.scan_rate_max, "the scan rate's ceiling per second");
  sim->add_option("--scan-probes", flags.scan_probes, "pages sampled per 2 MiB region (default 4)");
  sim->add_option("--scan-window", flags.scan_window,
                  "the fixed-window scanner: this much armed per period, as in 'numavm run'");
  sim->add_option("--scan-period", flags.scan_period, "time between scans (default 1s)");
  sim->add_option("--scan-period-max", flags.scan_period_max,
                  "with --scan-window, the longest adaptive period (default 16 times "
                  "--scan-period)");
  sim->add_flag("--measure-cpu", flags.measure_cpu,
                "also measure the balancer's real CPU time (differs run to run; the default "
                "figure is modelled from the work done, and the same every run)");
}

void AddAttachCommands(CLI::App& app, numavm::AttachFlags& attach, numavm::DetachFlags& detach) {
  CLI::App* a = app.add_subcommand(
      "attach",
      "Balance running libvirt domains from outside until Ctrl-C, SIGTERM or 'numavm "
      "detach': give each a home node (where its memory is and its vCPUs fit, as ESXi "
      "does), pin its vCPUs to the home node's CPUs (virDomainPinVcpu) and migrate its "
      "RAM there (move_pages on the QEMU process) under a rate limit. Detaching restores "
      "the vCPU pinning found at attach; migrated memory stays.");
  a->footer(
      std::string("\nThe QEMU process (by the domain's UUID on its command line) and its "
                  "guest RAM mapping are found in /proc, never through QMP passthrough (which "
                  "marks a domain tainted); memfd and anonymous RAM both work. "
                  "A domain that shuts down is dropped with a message; the others go on.\n"
                  "Examples:\n  numavm attach web1 web2 --mode advise\n"
                  "  numavm attach --all --connect qemu:///system --interval 10s\n\n") +
      numavm::kAttachExitHelp);
  a->add_option("domains", attach.domains, "libvirt domain names");
  a->add_flag("--all", attach.all, "every running domain");
  a->add_option("--connect", attach.connect,
                "libvirt URI (default: libvirt's default, qemu:///system for root)");
  a->add_option("--mode", attach.mode,
                "enforce (default: pin vCPUs and move memory) or advise (report what "
                "would be done, change nothing)");
  a->add_option("--interval", attach.interval, "time between balancing rounds (default 5s)");
  a->add_option("--migrate-rate", attach.migrate_rate,
                "page migration limit per second for all attached domains together (default 64M)");
  a->add_option("--duration", attach.duration,
                "detach by itself after this long, e.g. 10m (default: run until stopped)");
  a->add_option("--report", attach.report, "final report format: table (default) or json");

  CLI::App* d =
      app.add_subcommand("detach",
                         "Tell the numavm process balancing a libvirt domain to let it go; its "
                         "vCPU pinning is restored.");
  d->footer(
      "\nExit status: 0 detached (or, with --all, nothing was attached); 2 a named domain "
      "is not attached by any numavm process; 5 a numavm process did not answer or could not "
      "detach.\nExample: numavm detach web1\n");
  d->add_option("domains", detach.domains, "libvirt domain names");
  d->add_flag("--all", detach.all, "every domain any numavm process has attached");
}

void AddDaemonCommand(CLI::App& app, numavm::DaemonFlags& flags) {
  CLI::App* d = app.add_subcommand(
      "daemon",
      "Balance every running libvirt domain (or the configured ones) continuously, as "
      "'numavm attach --all' does, picking up domains as they start; serve Prometheus "
      "metrics over HTTP and a control socket for 'numavm report'. SIGHUP reloads the "
      "config; SIGTERM restores every domain's vCPU pinning and exits.");
  d->footer(
      std::string(
          "\nConfig (TOML, see configs/numavm-daemon.toml): [daemon] connect, mode, interval, "
          "migrate_rate, domains; [metrics] address (default 127.0.0.1), port (default 9464, 0: "
          "off). Flags override it. A systemd unit is in configs/numavm.service.\n"
          "Example: numavm daemon --config /etc/numavm/daemon.toml\n"
          "         curl -s http://127.0.0.1:9464/metrics\n\n") +
      numavm::kDaemonExitHelp);
  d->add_option("-c,--config", flags.config_path, "TOML config file")->check(CLI::ExistingFile);
  d->add_option("--connect", flags.connect, "libvirt URI");
  d->add_option("--mode", flags.mode, "enforce (default) or advise");
  d->add_option("--interval", flags.interval, "time between balancing rounds (default 5s)");
  d->add_option("--migrate-rate", flags.migrate_rate,
                "page migration limit per second (default 64M)");
  d->add_option("--domain", flags.domains, "balance only this domain (repeat); default: all")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  d->add_option("--metrics-address", flags.metrics_address,
                "address for /metrics (default 127.0.0.1: loopback only)");
  d->add_option("--metrics-port", flags.metrics_port, "port for /metrics (default 9464; 0: none)");
  d->add_option("--duration", flags.duration, "stop after this long (default: run until stopped)");
}

void AddReportCommand(CLI::App& app, numavm::ReportFlags& flags) {
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
      "/run/numavm for root).\nExamples:\n  numavm report\n  numavm report --json\n"
      "  numavm report --watch 2\n\n" +
      std::string(numavm::kReportExitHelp));
  r->add_flag("--json", flags.json, "JSON instead of a table");
  r->add_option(
      "--watch", flags.watch,
      "print again every DURATION until Ctrl-C (seconds, or e.g. 5s, 500ms; at least 100ms)");
  r->add_option("--connect", flags.connect, "libvirt URI (default: libvirt's default)");
  r->add_flag("--no-libvirt", flags.no_libvirt, "only numavm processes, do not ask libvirt");
}

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away (libvirtd restarting, a metrics scraper or a
  // `numavm report` hanging up, a closed stdout pipe) must be an EPIPE
  // error where it happens, never a signal that kills numavm - and with
  // `numavm run`, its VM.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app(kDescription, "numavm");
  app.set_version_flag("--version", "numavm 0.1.0");
  app.require_subcommand(1);
  app.footer("\nRun 'numavm COMMAND --help' for a command's options.");
  numavm::RunFlags run_flags;
  AddRunCommand(app, run_flags);
  numavm::ReplayFlags replay_flags;
  AddReplayCommand(app, replay_flags);
  numavm::SimulateFlags simulate_flags;
  AddSimulateCommand(app, simulate_flags);
  numavm::AttachFlags attach_flags;
  numavm::DetachFlags detach_flags;
  AddAttachCommands(app, attach_flags, detach_flags);
  numavm::DaemonFlags daemon_flags;
  AddDaemonCommand(app, daemon_flags);
  numavm::ReportFlags report_flags;
  AddReportCommand(app, report_flags);
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "Print the help of numavm or of one command");
  help->add_option("command", help_topic, "a command, e.g. run");
  // An option given an empty value ("--vcpus ''") is an error, never the
  // default it would silently fall back to.
  const CLI::Validator non_empty(
      [](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); }, "");
  for (CLI::App* sub : app.get_subcommands({})) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_expected_min() > 0 && !o->get_positional()) o->check(non_empty);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "numavm: %s (see 'numavm --help')\n", e.what());
    return numavm::kExitBadInput;
  }
  if (app.got_subcommand("help")) {
    if (help_topic.empty()) {
      // app.help() would describe the selected subcommand, "help" itself.
      std::cout << app.get_formatter()->make_help(&app, "numavm", CLI::AppFormatMode::Normal);
      return numavm::kExitOk;
    }
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == help_topic && sub != help) {
        std::cout << sub->help("numavm");
        return numavm::kExitOk;
      }
    }
    std::fprintf(stderr, "numavm help: no command '%s' (see 'numavm --help')\n",
                 help_topic.c_str());
    return numavm::kExitBadInput;
  }
  if (app.got_subcommand("run")) return numavm::RunCommand(run_flags);
  if (app.got_subcommand("replay")) return numavm::ReplayCommand(replay_flags);
  if (app.got_subcommand("simulate")) return numavm::SimulateCommand(simulate_flags);
  if (app.got_subcommand("attach")) return numavm::AttachCommand(attach_flags);
  if (app.got_subcommand("detach")) return numavm::DetachCommand(detach_flags);
  if (app.got_subcommand("daemon")) return numavm::DaemonCommand(daemon_flags);
  if (app.got_subcommand("report")) return numavm::ReportCommand(report_flags);
  return numavm::kExitBadInput;
}
