// The options of `numavm run`, `replay` and `simulate`.
#include <CLI/CLI.hpp>
#include <string>

#include "absl/strings/str_join.h"
#include "cli/command_line.h"
#include "cli/exit_codes.h"
#include "cli/payload_path.h"
#include "cli/shared_flags.h"

namespace numavm {

void AddRunCommand(CLI::App& app, RunFlags& flags) {
  CLI::App* run =
      app.add_subcommand("run",
                         "Boot a guest-tools payload on the bundled KVM VMM, run it to the end, "
                         "and print a per-VM summary (workload result, elapsed time, per-vCPU "
                         "throughput, guest memory per host node).");
  run->footer(std::string("\nPayloads: ") + absl::StrJoin(AvailablePayloads(), ", ") +
              "\nPayload arguments (key=value after --): size=BYTES (working "
              "set, default all free guest memory), iterations=N, seconds=S "
              "(run for S seconds of guest time instead), vcpus=N (vCPUs that "
              "work).\n"
              "Example: numavm run --payload numa02 --vcpus 2 --memory 512M "
              "--report=json -- iterations=8\n\n" +
              kExitCodeHelp);
  run->add_option("-c,--config", flags.config_path,
                  "TOML file with [vm], [payload], [placement], [report] and "
                  "[[cell]] tables (see configs/); flags override it")
      ->check(CLI::ExistingFile);
  run->add_option("--vcpus", flags.vcpus, "number of vCPUs (1-64; default 1)")->type_name("N");
  AddSizeOption(run, "--memory", &flags.memory,
                "guest RAM, e.g. 512M or 4G (default 512M; at least 16M)");
  OneOf(run->add_option("--backing", flags.backing,
                        "guest RAM backing: memfd (default; shared, trackable), anon, "
                        "hugetlb (2 MiB pages, must be reserved) or thp"),
        {"memfd", "anon", "hugetlb", "thp"});
  run->add_option("--cell", flags.cells,
                  "guest NUMA cell SIZE:VCPUS, e.g. --cell 256M:0 --cell 256M:1; "
                  "repeat per cell; cells replace --memory")
      ->type_name("SIZE:VCPUS")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  run->add_option("-p,--payload", flags.payload,
                  "guest-tools payload name or path to an ELF64 x86-64 payload "
                  "(default numa02)")
      ->type_name("NAME|FILE");
  run->add_option("--kernel", flags.kernel,
                  "boot this Linux kernel (a 64-bit bzImage) instead of a payload: COM1 is its "
                  "console, --cell becomes its ACPI NUMA nodes, poweroff ends the VM")
      ->type_name("FILE");
  run->add_option("--initrd", flags.initrd, "with --kernel: its initramfs")->type_name("FILE");
  run->add_option("--append", flags.append,
                  "with --kernel: its command line (default \"console=ttyS0 panic=-1\")")
      ->type_name("\"ARGS\"");
  OneOf(run->add_option("--placement", flags.placement,
                        "none (default), hard (vCPUs pinned and memory bound to their "
                        "node, like autonuma-benchmark HARD_BIND) or inverse (memory on "
                        "another node, INVERSE_BIND)"),
        {"none", "hard", "inverse"});
  AddReportFlags(run, &flags.report, "summary format");
  AddDurationFlag(run, &flags.timeout,
                  "stop the VM after this long, e.g. 30s or 5m, and exit 4 (default: "
                  "none; --timeout is its old name)",
                  "--timeout");
  run->add_flag("--quiet-console", flags.quiet_console,
                "do not echo guest console lines to stderr");
  OneOf(run->add_option("--sampler", flags.sampler,
                        "access tracking: hint (default; userfaultfd minor hinting faults, sees "
                        "reads and writes, needs memfd or hugetlb backing; anon backing falls "
                        "back to prot where KVM names the faulting page, else to wp; thp to wp), "
                        "wp (userfaultfd write-protect hinting faults, writes, anon and thp), "
                        "evict (each probe saved and freed, its next access a userfaultfd "
                        "missing fault that puts it back: reads and writes, anon), prot "
                        "(PROT_NONE hinting faults as the kernel's balancing takes them: reads "
                        "and writes on any backing, where KVM names the faulting page, not for "
                        "Linux guests), ring (per-vCPU dirty ring, writes), dirtylog (dirty-log "
                        "windows, writes, VM-wide) or off"),
        {"hint", "wp", "evict", "prot", "ring", "dirtylog", "off"});
  run->add_option("--scan-stall-budget", flags.scan_stall_budget,
                  "share of the vCPUs' busy time the sampling faults may cost (default 1%); the "
                  "scan rate's ceiling")
      ->type_name("SHARE");
  AddSizeOption(run, "--scan-rate-min", &flags.scan_rate_min,
                "the scan rate's floor, guest memory per second, e.g. 16M (default: a "
                "sixteenth of the ceiling)");
  AddSizeOption(run, "--scan-rate-max", &flags.scan_rate_max,
                "the scan rate's ceiling, e.g. 1G (default: what the stall budget allows)");
  run->add_option("--scan-probes", flags.scan_probes,
                  "pages sampled per 2 MiB region and sweep (default 4; 1-512)")
      ->type_name("N");
  AddSizeOption(run, "--scan-window", &flags.scan_window,
                "instead of regions at a controlled rate: arm this much guest memory per "
                "scan period, every page of it, e.g. 64M (the fixed-window scanner)");
  AddDurationOption(run, "--scan-period", &flags.scan_period,
                    "time between scans, e.g. 1s or 100ms (default 1s; at least 10ms)");
  AddDurationOption(run, "--scan-period-max", &flags.scan_period_max,
                    "with --scan-window and --balance=on|advise the period adapts: twice as long "
                    "while accesses are >= 70% local and nothing moves, half as long below; this "
                    "is the longest (default 16 times --scan-period)");
  run->add_option("--dirty-ring-entries", flags.ring_entries,
                  "entries per vCPU dirty ring with --sampler=ring (power of two; default 16384)")
      ->type_name("N");
  AddBalanceFlag(run, &flags.balance,
                 "off (default: measure locality, act on nothing), advise (print each "
                 "page decision with its reason, act on none) or on (migrate pages)");
  AddSizeOption(run, "--migrate-rate", &flags.migrate_rate,
                "page migration limit per second for this VM, e.g. 256M (default 256M)");
  run->add_option("--migrate-threads", flags.migrate_threads,
                  "threads that may share a scan period's page moves once one thread would "
                  "take over 250ms for them, one more per CPU the host had idle (default 4, "
                  "at most 64; 1: one thread; pages moved protected - the default on Linux 6.5 "
                  "and later - or unmapped move with one)")
      ->type_name("N");
  AddSizeOption(run, "--host-migrate-rate", &flags.host_migrate_rate,
                "page migration limit per second shared by all 'numavm run' VMs on the host "
                "(default 1G; 0: this VM's limit only)");
  AddDurationOption(run, "--stats-interval", &flags.stats_interval,
                    "print progress on stderr this often, e.g. 1s: guest work, samples, access "
                    "locality, pages migrated, vCPU moves (default: every 5s when stderr "
                    "is a terminal, else none; 0: none)");
  AddDurationOption(run, "--placement-interval", &flags.placement_interval,
                    "record where the payload's declared memory is this often, e.g. 5s "
                    "(placement_series in the JSON report: placement locality, guest bytes, "
                    "bytes per node)");
  run->add_flag("--migrate-unmapped", flags.migrate_unmapped,
                "memfd and hugetlb memory: unmap each contiguous run of a migration batch from "
                "the guest at once and move its pages through the alias process, a child of "
                "numavm that KVM does not know - no TLB shootdown or KVM flush per page "
                "(default: --migrate-protected)");
  run->add_flag("--migrate-protected", flags.migrate_protected,
                "the default: make each contiguous run of a migration batch inaccessible at "
                "once (PROT_NONE: one TLB shootdown and one KVM invalidation per run) and move "
                "its pages where they are, as the kernel's NUMA balancing moves pages; vCPUs "
                "that touch the run wait for the move (Linux 6.5 or later, else pages move "
                "mapped, with a note; a payload's runtime and a Linux guest move mapped)");
  run->add_flag("--migrate-mapped", flags.migrate_mapped,
                "move each page where the guest maps it: a TLB shootdown and a KVM flush per "
                "page (what kernels before 6.5 get; for comparison)");
  run->add_flag("--migrate-churn", flags.migrate_churn,
                "integrity exercise: every scan period move all resident guest memory to the "
                "next node (round robin), within --migrate-rate, while the guest runs; run it "
                "with the verify payload (needs 2+ nodes with memory)");
  run->add_flag("--log-decisions", flags.log_decisions,
                "with --balance on or advise: print each decision to move memory on stderr as "
                "it is made - the run's time, the guest pages, the node, the reason (region-move, "
                "region-follow, region-bracket, ...)");
  run->add_option("--record", flags.record,
                  "save the sampled access stream (vCPU, page, kind, time per period) to "
                  "FILE for 'numavm replay'")
      ->type_name("FILE");
  run->add_option("--plot", flags.plot,
                  "also draw the run as SVG: locality over time against HARD binding, guest "
                  "memory per host node over time (sampled every --placement-interval, default "
                  "1s with --plot), pages migrated")
      ->type_name("FILE.svg");
  run->add_option("--name", flags.name,
                  "the VM's name in reports and 'numavm report' (default: PAYLOAD-PID)")
      ->type_name("NAME");
  run->add_option("args", flags.payload_args, "payload arguments, key=value");
}

void AddReplayCommand(CLI::App& app, ReplayFlags& flags) {
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
      std::string(kReplayExitHelp));
  replay->add_option("trace", flags.trace_path, "trace file written by 'numavm run --record'")
      ->required()
      ->check(CLI::ExistingFile);
  replay
      ->add_option("-t,--topology", flags.topology_path,
                   "topology file (TOML; see configs/topology-*.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  AddReportFlags(replay, &flags.report, "report format");
  OneOf(
      replay->add_option("--first-touch", flags.first_touch,
                         "where memory starts: boot (default; vCPU 0's node) or sampled (the node "
                         "of each page's first sample)"),
      {"boot", "sampled"});
  AddBalanceFlag(replay, &flags.balance,
                 "on (default), advise or off (the model's locality without balancing)");
  AddSizeOption(replay, "--migrate-rate", &flags.migrate_rate,
                "page migration limit per second in the model (default 256M)");
  replay
      ->add_option("--plot", flags.plot,
                   "also draw the replay as SVG: ground-truth and sampled locality over time "
                   "against the best placement, pages migrated against the fewest that reach it")
      ->type_name("FILE.svg");
}

void AddSimulateCommand(CLI::App& app, SimulateFlags& flags) {
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
      "--topology configs/topology-2node-large.toml --duration 300\n"
      "         numavm simulate --workload handover:every=30s --vcpus 8 --memory 4G "
      "--topology configs/topology-4node-large.toml --report json\n\n"
      "Exit status: 0 done; 2 bad input (flags, workload, topology, sizes); 5 the --plot file "
      "could not be written (the report is still printed).");
  sim->add_option("-w,--workload", flags.workload,
                  "NAME[:key=value,...], e.g. numa02 or groups:n=4 (default numa02)")
      ->type_name("NAME[:KEY=VALUE,...]");
  sim->add_option("--vcpus", flags.vcpus, "vCPUs, 1-256 (default 4)")->type_name("N");
  AddSizeOption(sim, "--memory", &flags.memory, "guest RAM, 16M to 1T (default 1G)");
  sim->add_option("-t,--topology", flags.topology_path,
                  "topology file (TOML; see configs/topology-*.toml)")
      ->required()
      ->check(CLI::ExistingFile);
  AddDurationFlag(sim, &flags.seconds,
                  "simulated time, e.g. 600 or 10m (default 60s; --seconds is its old "
                  "name)",
                  "--seconds");
  sim->add_option("--seed", flags.seed, "seed of the sampler model (default 1)")->type_name("N");
  OneOf(
      sim->add_option("--first-touch", flags.first_touch,
                      "boot (default: all memory first touched from vCPU 0's node, spilling to the "
                      "nearest nodes) or spread (each page starts on its user's node)"),
      {"boot", "spread"});
  OneOf(sim->add_option(
            "--touch", flags.touch,
            "who touches an armed page first: runs (default: every page one arming call arms - "
            "a run of neighbouring probe pages where calls are dear - by the vCPU drawn for the "
            "first, as vCPUs that go through memory in order, the NUMA lab's workloads, touch "
            "them) or pages (each page by a vCPU drawn on its own, in proportion to how often "
            "each uses it)"),
        {"runs", "pages"});
  AddDurationOption(sim, "--confine-first", &flags.confine_first,
                    "hold every vCPU and all memory on vCPU 0's node for this long, as a cpuset "
                    "of that node would (the NUMA lab's first touch), then let them go; times to "
                    "90% count only from then on (default 0: never)");
  OneOf(sim->add_option("--confined-work", flags.confined_work,
                        "what the guest does while held by --confine-first: workload (default: "
                        "its workload runs) or first-touch (it only first-touches its memory, "
                        "and its workload starts 2 s before the release, as in the NUMA lab's "
                        "numavm runs: the probes armed while held all fire then) or "
                        "first-touch-in-order (the same, but the first touch goes in address "
                        "order at a steady pace until then, as vCPU 0 touches a numa02 guest's "
                        "memory in the lab: the scan arms only what is touched so far)"),
        {"workload", "first-touch", "first-touch-in-order"});
  AddDurationOption(sim, "--fault-cost", &flags.fault_cost,
                    "one hinting-fault round trip, charged to the faulting vCPU (default 55us, as "
                    "measured on the development machine; hardware: 7-40us)");
  AddDurationOption(sim, "--arm-cost", &flags.arm_cost,
                    "the host's time for one arming call - a probe, or a run of neighbouring "
                    "probe pages (one TLB shootdown) - charged to the scan's budget (default 2us, "
                    "as measured on the development machine; the NUMA lab: 1.6-35ms, its "
                    "table's 'us/call' - a report's sampling.host_seconds_per_call_mean - or "
                    "'us/probe host' times the pages one call arms: two regions' runs where they "
                    "meet)");
  sim->add_flag("--arm-cost-per-node", flags.arm_cost_per_node,
                "charge --arm-cost once for each node the vCPUs run on: a TLB shootdown waits "
                "for every CPU the VM's threads run on (the NUMA lab: one emulated CPU after "
                "another on one host thread)");
  AddDurationOption(sim, "--move-cost", &flags.move_cost,
                    "the balancer's wall time to migrate one page, within the 1s a period's "
                    "moves may take in 'numavm run' (default 0: free; the NUMA lab: ~1.4ms through "
                    "the alias process, ~8ms mapped)");
  AddReportFlags(sim, &flags.report, "report format");
  OneOf(sim->add_option("--sampler", flags.sampler,
                        "hint (default), wp, evict, prot, ring, dirtylog or off, as in 'numavm "
                        "run'"),
        {"hint", "wp", "evict", "prot", "ring", "dirtylog", "off"});
  AddBalanceFlag(sim, &flags.balance, "on (default), advise or off, as in 'numavm run'");
  AddSizeOption(sim, "--migrate-rate", &flags.migrate_rate,
                "page migration limit per second (default 256M)");
  sim->add_option("--migrate-threads", flags.migrate_threads,
                  "threads that may share a period's page moves, as in 'numavm run' (default 4; "
                  "matters with --move-cost; the model's host has CPUs to spare)")
      ->type_name("N");
  sim->add_option("--plot", flags.plot,
                  "also draw the simulation as SVG: ground-truth and sampled locality over "
                  "time against the best placement, pages migrated against the fewest that "
                  "reach it")
      ->type_name("FILE.svg");
  sim->add_option("--busy-cpus", flags.busy_cpus,
                  "other work on the host, in CPUs per node in the topology's order (one figure: "
                  "every node's; default none). A VM fits a node only in the CPUs left free")
      ->type_name("N[,N...]");
  sim->add_option("--scan-stall-budget", flags.scan_stall_budget,
                  "share of busy vCPU time sampling faults may cost (default 1%), as in 'numavm "
                  "run'")
      ->type_name("SHARE");
  AddSizeOption(sim, "--scan-rate-min", &flags.scan_rate_min, "the scan rate's floor per second");
  AddSizeOption(sim, "--scan-rate-max", &flags.scan_rate_max, "the scan rate's ceiling per second");
  sim->add_option("--scan-probes", flags.scan_probes, "pages sampled per 2 MiB region (default 4)")
      ->type_name("N");
  AddSizeOption(sim, "--scan-window", &flags.scan_window,
                "the fixed-window scanner: this much armed per period, as in 'numavm run'");
  AddDurationOption(sim, "--scan-period", &flags.scan_period, "time between scans (default 1s)");
  AddDurationOption(sim, "--scan-period-max", &flags.scan_period_max,
                    "with --scan-window, the longest adaptive period (default 16 times "
                    "--scan-period)");
  sim->add_flag("--measure-cpu", flags.measure_cpu,
                "also measure the balancer's real CPU time (differs run to run; the default "
                "figure is modelled from the work done, and the same every run)");
}

void AddPlotCommand(CLI::App& app, PlotFlags& flags) {
  CLI::App* plot = app.add_subcommand(
      "plot",
      "Draw a saved JSON report of 'numavm run', 'replay' or 'simulate' as a standalone SVG, "
      "as their --plot does: locality over time against the best placement (or HARD "
      "binding), guest memory per host node, pages migrated.");
  plot->footer(
      "\nExample: numavm simulate --topology configs/topology-2node.toml --json > sim.json\n"
      "         numavm plot sim.json sim.svg\n\n"
      "Exit status: 0 written; 2 bad input (not a JSON report of run, replay or simulate, or "
      "nothing over time in it; one line on stderr); 5 the SVG file could not be written.");
  plot->add_option("report", flags.report_path, "the JSON report ('-': standard input)")
      ->required()
      ->type_name("REPORT.json");
  plot->add_option("svg", flags.svg_path, "the SVG file to write")
      ->required()
      ->type_name("FILE.svg");
}

}  // namespace numavm
