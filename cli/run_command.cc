#include "cli/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <iostream>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "balancer/actuation/host_budget.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/control/control_socket.h"
#include "balancer/host_placement_view.h"
#include "balancer/replay/trace.h"
#include "balancer/sampling/sampling_loop.h"
#include "balancer/topology/topology.h"
#include "balancer/vm_balancer.h"
#include "base/size.h"
#include "base/thread_cpu.h"
#include "cli/balance_report.h"
#include "cli/exit_codes.h"
#include "cli/guest_image.h"
#include "cli/migration_churn.h"
#include "cli/page_moves_setup.h"
#include "cli/periodic.h"
#include "cli/placement_locality.h"
#include "cli/placement_observer.h"
#include "cli/report_envelope.h"
#include "cli/report_plot.h"
#include "cli/run_ending.h"
#include "cli/run_progress.h"
#include "cli/run_registration.h"
#include "cli/run_report.h"
#include "cli/sampling_setup.h"
#include "cli/stop_signals.h"
#include "vmm/elf_payload.h"
#include "vmm/guest_abi.h"
#include "vmm/host_memory.h"
#include "vmm/virtual_machine.h"

namespace numavm {
namespace {

int Fail(const absl::Status& status, int code) {
  std::fprintf(stderr, "numavm run: %s\n", std::string(status.message()).c_str());
  return code;
}

}  // namespace

int RunCommand(const RunFlags& flags) {
  // SIGINT and SIGTERM are taken by SignalWatcher's sigtimedwait; every
  // thread (sampling, control socket, vCPUs) must block them from the
  // start, or the default action would end the process from one of them.
  BlockStopSignals();
  absl::StatusOr<RunOptions> resolved = ResolveRunOptions(flags);
  if (!resolved.ok()) return Fail(resolved.status(), kExitBadInput);
  RunOptions& options = *resolved;
  if (absl::Status s = NormalizeVmConfig(options.vm); !s.ok()) {
    return Fail(s, kExitBadInput);
  }
  if (absl::StatusOr<HostMemoryInfo> host = ReadHostMemoryInfo(); host.ok()) {
    if (absl::Status s = CheckHostCanFit(options.vm, host->total_bytes, host->available_bytes);
        !s.ok()) {
      return Fail(s, kExitBadInput);
    }
  }
  absl::StatusOr<std::string> fallback = PrepareSampling(options);
  if (!fallback.ok()) return Fail(fallback.status(), kExitBadInput);
  // The user's errors before anything needs /dev/kvm: the same answer on
  // every host.
  if (!options.record_path.empty() && options.sampling.sampler == SamplerKind::kOff) {
    return Fail(absl::InvalidArgumentError("--record needs a sampler (not --sampler=off)"),
                kExitBadInput);
  }
  if (absl::Status s = CheckKernelFile(options); !s.ok()) return Fail(s, kExitBadInput);
  // Forked now, while this process is small and has one thread.
  AliasSetup alias_setup = StartAliasProcess(options);
  const std::unique_ptr<AliasProcess>& alias = alias_setup.alias;
  absl::StatusOr<GuestImage> image = ReadGuestImage(options);
  if (!image.ok()) return Fail(image.status(), kExitBadInput);

  RunSummary summary;
  summary.payload = options.payload;
  summary.options = &options;
  if (!fallback->empty()) summary.notes.push_back(*fallback);
  if (!alias_setup.note.empty()) summary.notes.push_back(alias_setup.note);
  absl::StatusOr<Topology> topology = ReadHostTopology();
  if (!topology.ok()) {
    // No NUMA sysfs (e.g. a kernel without CONFIG_NUMA): one node, all CPUs.
    topology = Topology{{NumaNode{0, {}, 0, 0}}, {{10}}};
    summary.notes.push_back(absl::StrCat("host topology: ", topology.status().message()));
  }
  for (const NumaNode& n : topology->nodes) summary.host_nodes.push_back(n.id);
  const std::vector<int> cpu_nodes = topology->CpuNodeIds();
  if (options.placement != StaticPlacement::kNone && cpu_nodes.size() <= 1) {
    summary.notes.push_back(
        absl::StrCat("--placement=", StaticPlacementName(options.placement),
                     ": this host has one NUMA node with CPUs, so the bound is trivial "
                     "(every access is local)"));
  }

  PlacementObserver placement(*topology,
                              StaticPlan(options.placement, options.vm.vcpus, cpu_nodes));
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      CreateVirtualMachine(options.vm, *image, &placement);
  if (!vm.ok()) {
    bool input = absl::IsInvalidArgument(vm.status()) || absl::IsResourceExhausted(vm.status());
    return Fail(vm.status(), input ? kExitBadInput : kExitHostError);
  }
  placement.set_memory(&(*vm)->memory());
  absl::StatusOr<std::unique_ptr<AccessSampler>> sampler = CreateSampler(options.sampling, **vm);
  if (!sampler.ok()) {
    bool input =
        absl::IsInvalidArgument(sampler.status()) || absl::IsFailedPrecondition(sampler.status());
    return Fail(sampler.status(), input ? kExitBadInput : kExitHostError);
  }
  summary.sampling.sampler = std::string(SamplerKindName(options.sampling.sampler));
  summary.sampling.window_bytes = options.sampling.window_bytes;
  summary.sampling.period = options.sampling.period;
  // The balancer rides on the sampling thread: each period's batch goes
  // through stats and policy to the migrator. A balancer error disables
  // balancing for this VM; the VM runs on.
  summary.balance.mode = std::string(BalanceModeName(options.balance.mode));
  RateLimiter limiter(options.balance.migrate_bytes_per_second,
                      options.balance.migrate_bytes_per_second, absl::ZeroDuration());
  // The host's budget, shared with every other numavm process; without it
  // (no runtime directory) this VM's own limit still applies.
  std::unique_ptr<HostBudget> host_budget;
  if (options.balance.host_migrate_bytes_per_second > 0 &&
      (options.balance.mode == BalanceMode::kOn || options.migrate_churn)) {
    absl::StatusOr<std::unique_ptr<HostBudget>> b =
        HostBudget::Open(RuntimeDir(), options.balance.host_migrate_bytes_per_second);
    if (b.ok()) {
      host_budget = *std::move(b);
      limiter.set_host(host_budget.get());
    } else {
      summary.notes.push_back(absl::StrCat("host migration budget not shared (",
                                           b.status().message(), "): this VM's limit only"));
    }
  }
  HostPlacementView view(
      *topology, GuestRamOf(**vm), [&vm] { return (*vm)->VcpuThreadIds(); }, &limiter);
  view.set_migrate_threads(options.balance.migrate_threads);
  std::unique_ptr<MigrationChurn> churn;
  if (options.migrate_churn) {
    churn = std::make_unique<MigrationChurn>(*topology, (*vm)->memory(), &limiter,
                                             BackingAlignment(options.vm.backing));
    if (!churn->possible()) {
      summary.notes.push_back("--migrate-churn: this host has one node with memory; nothing moves");
    }
  }
  for (std::string& note :
       SetUpPageMoves(options, **vm, alias.get(), sampler->get(), view, churn.get())) {
    summary.notes.push_back(std::move(note));
  }
  const VmBalancer::Advice advice = options.log_decisions ? DecisionsOnStderr(absl::Now())
                                    : options.balance.mode == BalanceMode::kAdvise
                                        ? AdviceOnStderr()
                                        : nullptr;
  BalancerConfig balancer_config;
  balancer_config.backing_pages = BackingAlignment(options.vm.backing) / 4096;
  // Guest cells group their vCPUs; one cell (the default) says nothing.
  if (options.vm.cells.size() > 1) {
    for (const CellConfig& cell : options.vm.cells) balancer_config.cells.push_back(cell.vcpus);
  }
  VmBalancer balancer(options.balance.mode, *topology, options.vm.vcpus,
                      (*vm)->memory().total_bytes() / 4096, view, balancer_config, advice);
  std::atomic<bool> balancing{true};
  std::string balance_error;
  std::optional<TraceWriter> record;
  if (!options.record_path.empty()) {
    if (!*sampler) {  // no sampler: --sampler=off, refused above
      return Fail(absl::InternalError("--record without a sampler"), kExitHostError);
    }
    TraceHeader header{options.vm.vcpus, (*vm)->memory().total_bytes() / 4096,
                       options.sampling.period, options.payload,
                       std::string(SamplerKindName(options.sampling.sampler))};
    // A path is not a token of the header line.
    if (header.payload.find_first_of(" \t/") != std::string::npos) header.payload = "custom";
    absl::StatusOr<TraceWriter> writer = TraceWriter::Create(options.record_path, header);
    if (!writer.ok()) return Fail(writer.status(), kExitBadInput);
    record.emplace(std::move(*writer));
  }
  std::unique_ptr<SamplingLoop> sampling;
  auto consume = [&](const AccessBatch& batch) -> PeriodOutcome {
    if (record) record->Append((*vm)->Elapsed(), batch);
    if (!balancing.load()) return {};
    absl::StatusOr<PeriodOutcome> outcome = balancer.OnBatch(batch, (*vm)->Elapsed());
    if (!outcome.ok()) {
      balance_error = std::string(outcome.status().message());
      balancing.store(false);
      std::fprintf(stderr, "numavm run: balancing disabled: %s\n", balance_error.c_str());
      return {};
    }
    return *outcome;
  };
  if (*sampler) {
    auto vcpu_busy = [&vm] {
      absl::Duration busy;
      for (pid_t tid : (*vm)->VcpuThreadIds()) {
        if (tid > 0) busy += CpuTimeOfThread(tid);
      }
      return busy;
    };
    sampling = std::make_unique<SamplingLoop>(**sampler, ScanConfigOf(options), consume, vcpu_busy);
    // A sampler that cannot start leaves the VM to run untracked.
    if (absl::Status s = sampling->Start(); !s.ok()) {
      std::fprintf(stderr, "numavm run: sampling disabled: %s\n", std::string(s.message()).c_str());
    }
  }
  // Visible to `numavm report` while it runs.
  const RunRegistrationInputs registration_inputs{
      !options.name.empty()
          ? options.name
          : absl::StrCat(
                options.payload.find('/') == std::string::npos ? options.payload : "custom", "-",
                getpid()),
      std::string(BalanceModeName(options.balance.mode)),
      &*topology,
      vm->get(),
      &view,
      &balancer,
      BackingAlignment(options.vm.backing)};
  std::unique_ptr<ControlServer> registration = RegisterRunVm(registration_inputs);
  // The churn runs on its own clock, whatever the sampler does.
  std::atomic<bool> churning{churn != nullptr && churn->possible()};
  std::thread churn_thread;
  if (churning) {
    churn_thread = std::thread([&] {
      while (churning.load()) {
        churn->Step((*vm)->Elapsed());
        absl::SleepFor(options.sampling.period);
      }
    });
  }
  {
    SignalWatcher watcher(**vm);
    std::unique_ptr<Periodic> live;
    // Progress: every --stats-interval; on a terminal, by default.
    const absl::Duration progress =
        options.stats_interval_given
            ? options.stats_interval
            : (isatty(STDERR_FILENO) ? kTerminalProgressInterval : absl::ZeroDuration());
    if (progress > absl::ZeroDuration()) {
      live = std::make_unique<Periodic>(
          progress, PrintLine([&] {
            const SamplerStats st = *sampler ? (*sampler)->stats() : SamplerStats{};
            const BalancerCounters bc = balancer.counters();
            return ProgressLine({(*vm)->Elapsed(), (*vm)->channel().ProgressBytes(),
                                 *sampler ? &st : nullptr, *sampler ? &bc : nullptr,
                                 sampling ? sampling->period() : options.sampling.period});
          }));
    }
    // Where the declared memory is, over time (the lab's convergence).
    absl::Mutex series_mu;
    std::unique_ptr<Periodic> series;
    if (options.placement_interval > absl::ZeroDuration()) {
      series = std::make_unique<Periodic>(options.placement_interval, [&] {
        std::vector<int> ids;
        for (int n : view.VcpuNodes()) {
          ids.push_back(n >= 0 && n < topology->node_count() ? topology->nodes[n].id : -1);
        }
        PlacementPoint p;
        p.vcpu_nodes = ids;
        p.seconds = absl::ToDoubleSeconds((*vm)->Elapsed());
        for (uint64_t b : (*vm)->channel().ProgressBytes()) p.guest_bytes += b;
        LayoutPlacement where = MeasureLayoutPlacement(placement.layouts(), (*vm)->memory(), ids);
        p.locality = where.locality;
        p.bytes_per_node = std::move(where.bytes_per_node);
        absl::MutexLock lock(&series_mu);
        summary.placement_series.push_back(std::move(p));
      });
    }
    summary.outcome = (*vm)->Run();
  }
  churning.store(false);
  if (churn_thread.joinable()) churn_thread.join();
  registration.reset();
  if (sampling) EndSampling(*sampling, **sampler, options, summary);
  SummarizeBalance(balancer, view, **vm, churn.get(), summary);
  summary.balance.error = balance_error;
  if (host_budget != nullptr) {
    if (std::string p = host_budget->Problem(); !p.empty()) summary.notes.push_back(p);
  }
  summary.exit_code = ExitCodeFor(summary.outcome.end);
  std::string record_error;  // a recording the user asked for that was lost
  if (record) {
    if (absl::Status s = record->Close(); s.ok()) {
      summary.notes.push_back(absl::StrCat("access stream recorded in ", options.record_path));
    } else {
      record_error = absl::StrCat("--record ", options.record_path, ": ", s.message());
      summary.notes.push_back(record_error);
      if (summary.exit_code == kExitOk) summary.exit_code = kExitHostError;
    }
  }

  SummarizePlacement(**vm, *topology, placement, options, registration_inputs, summary);

  // Interrupted after the VM stopped: still the report, and the exit status
  // of an interrupted run.
  if (TakeStopSignal() && summary.exit_code == kExitOk) summary.exit_code = kExitInterrupted;
  const nlohmann::json report = WithReportEnvelope("run", SummaryToJson(summary));
  if (options.report == ReportFormat::kJson) {
    std::cout << report.dump(2) << std::endl;
  } else {
    std::cout << SummaryToTable(summary) << std::flush;
  }
  if (ExitCodeFor(summary.outcome.end) != kExitOk) {
    std::fprintf(stderr, "numavm run: %s\n", summary.outcome.message.c_str());
  }
  if (!record_error.empty()) std::fprintf(stderr, "numavm run: %s\n", record_error.c_str());
  if (int plotted = PlotIfAsked("run", report, options.plot_path);
      plotted != kExitOk && summary.exit_code == kExitOk) {
    summary.exit_code = plotted;
  }
  if (TakeStopSignal() && summary.exit_code == kExitOk) summary.exit_code = kExitInterrupted;
  return summary.exit_code;
}

}  // namespace numavm
