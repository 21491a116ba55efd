#include "cli/simulate_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "balancer/simulate/simulation.h"
#include "balancer/topology/topology_file.h"
#include "base/size.h"
#include "cli/balance_report.h"
#include "cli/exit_codes.h"
#include "cli/report_envelope.h"
#include "cli/report_plot.h"
#include "cli/run_options.h"

namespace numavm {
namespace {

constexpr const char* kBestDefinition =
    "each page on the node whose vCPUs use it most, vCPUs where they started";
constexpr const char* kBestMovingVcpusDefinition =
    "the same with vCPUs moved or swapped between nodes, within their CPUs, while that raises it "
    "(local search from the start)";

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "numavm simulate: %s\n", std::string(status.message()).c_str());
  return kExitBadInput;
}

nlohmann::json Optional(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

absl::StatusOr<absl::Duration> ParseFlagDuration(absl::string_view flag, absl::string_view text) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", d.status().message()));
  return d;
}

absl::StatusOr<SimulationOptions> Resolve(const SimulateFlags& flags) {
  SimulationOptions o;
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(flags.workload);
  if (!spec.ok()) return spec.status();
  o.workload = *spec;
  o.vcpus = flags.vcpus;
  absl::StatusOr<uint64_t> memory = ParseSize(flags.memory);
  if (!memory.ok())
    return absl::InvalidArgumentError(absl::StrCat("--memory: ", memory.status().message()));
  o.memory_bytes = *memory;
  absl::StatusOr<absl::Duration> seconds = ParseFlagDuration("--duration", flags.seconds);
  if (!seconds.ok()) return seconds.status();
  o.seconds = *seconds;
  o.seed = flags.seed;
  if (flags.first_touch == "boot") {
    o.first_touch = SimFirstTouch::kBoot;
  } else if (flags.first_touch == "spread") {
    o.first_touch = SimFirstTouch::kSpread;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--first-touch '", flags.first_touch, "': want boot or spread"));
  }
  if (flags.touch == "runs" || flags.touch == "pages") {
    o.touch_runs = flags.touch == "runs";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--touch '", flags.touch, "': want runs or pages"));
  }
  if (flags.confine_first != "0") {
    absl::StatusOr<absl::Duration> confined =
        ParseFlagDuration("--confine-first", flags.confine_first);
    if (!confined.ok()) return confined.status();
    o.confined = *confined;
  }
  if (flags.confined_work == "workload" || flags.confined_work == "first-touch" ||
      flags.confined_work == "first-touch-in-order") {
    o.held_first_touch_only = flags.confined_work != "workload";
    o.held_touch_in_order = flags.confined_work == "first-touch-in-order";
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--confined-work '", flags.confined_work,
                     "': want workload, first-touch or first-touch-in-order"));
  }
  // A cost, 0 to 1 s, through the one duration parser of every flag (0
  // allowed here: free).
  auto cost = [](const char* flag, const std::string& text,
                 const char* example) -> absl::StatusOr<absl::Duration> {
    const absl::StatusOr<absl::Duration> d =
        text == "0" ? absl::StatusOr<absl::Duration>(absl::ZeroDuration()) : ParseTimeout(text);
    if (!d.ok() || *d > absl::Seconds(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " '", text, "': want a duration from 0 to 1s, e.g. ", example));
    }
    return *d;
  };
  absl::StatusOr<absl::Duration> fault = cost("--fault-cost", flags.fault_cost, "55us");
  if (!fault.ok()) return fault.status();
  o.costs.hint_fault = *fault;
  absl::StatusOr<absl::Duration> arm = cost("--arm-cost", flags.arm_cost, "3ms");
  if (!arm.ok()) return arm.status();
  o.costs.arm_page = *arm;
  o.costs.arm_per_node = flags.arm_cost_per_node;
  absl::StatusOr<absl::Duration> move = cost("--move-cost", flags.move_cost, "1ms");
  if (!move.ok()) return move.status();
  o.costs.move_page = *move;
  absl::StatusOr<SamplerKind> sampler = ParseSamplerKind(flags.sampler);
  if (!sampler.ok()) return sampler.status();
  o.sampler = *sampler;
  absl::StatusOr<BalanceMode> mode = ParseBalanceMode(flags.balance);
  if (!mode.ok()) return mode.status();
  o.mode = *mode;
  absl::StatusOr<uint64_t> rate = ParseMigrateRate("--migrate-rate", flags.migrate_rate);
  if (!rate.ok()) return rate.status();
  o.migrate_bytes_per_second = *rate;
  if (absl::Status s = CheckMigrateThreads(flags.migrate_threads); !s.ok()) return s;
  o.migrate_threads = flags.migrate_threads;
  // The scan flags mean what they mean for `numavm run`, checked by the
  // same setters.
  RunOptions run;
  if (!flags.scan_window.empty()) {
    if (absl::Status s = SetScanWindow(flags.scan_window, run); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-window: ", s.message()));
    }
  }
  struct {
    const std::string& value;
    const char* flag;
    absl::Status (*set)(absl::string_view, RunOptions&);
  } const rate_flags[] = {{flags.scan_stall_budget, "--scan-stall-budget", SetScanStallBudget},
                          {flags.scan_rate_min, "--scan-rate-min", SetScanRateMin},
                          {flags.scan_rate_max, "--scan-rate-max", SetScanRateMax}};
  for (const auto& f : rate_flags) {
    if (f.value.empty()) continue;
    if (absl::Status s = f.set(f.value, run); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(f.flag, ": ", s.message()));
    }
  }
  if (flags.scan_probes != 0) {
    if (absl::Status s = SetScanProbes(flags.scan_probes, run); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-probes: ", s.message()));
    }
  }
  if (absl::Status s = SetScanPeriod(flags.scan_period, run); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--scan-period: ", s.message()));
  }
  run.sampling.period_max = run.sampling.period * 16;
  if (!flags.scan_period_max.empty()) {
    if (absl::Status s = SetScanPeriodMax(flags.scan_period_max, run); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-period-max: ", s.message()));
    }
    if (run.sampling.period_max < run.sampling.period) {
      return absl::InvalidArgumentError("--scan-period-max is shorter than --scan-period");
    }
  }
  o.scan.window_bytes = run.sampling.window_bytes;
  o.scan.period = run.sampling.period;
  o.scan.period_max = run.sampling.period_max;
  o.scan.adaptive = o.mode != BalanceMode::kOff;
  o.scan.rate = run.sampling.rate;
  o.measure_cpu = flags.measure_cpu;
  if (!flags.busy_cpus.empty()) {
    for (absl::string_view part : absl::StrSplit(flags.busy_cpus, ',')) {
      double busy = 0;
      if (!absl::SimpleAtod(part, &busy) || !std::isfinite(busy) || busy < 0) {
        return absl::InvalidArgumentError(absl::StrCat("--busy-cpus '", flags.busy_cpus,
                                                       "': want CPUs per node, e.g. 3 or 3,0.5"));
      }
      o.other_busy.push_back(busy);
    }
  }
  return o;
}

nlohmann::json ToJson(const SimulateFlags& flags, const SimulationOptions& o,
                      const SimulationResult& r) {
  nlohmann::json j;
  j["workload"] = {{"name", o.workload.shape},
                   {"params", o.workload.params},
                   {"vcpus", o.vcpus},
                   {"memory_bytes", o.memory_bytes}};
  j["model"] = {{"topology", flags.topology_path},
                {"seconds", absl::ToDoubleSeconds(o.seconds)},
                {"seed", o.seed},
                {"first_touch", flags.first_touch},
                {"confined_seconds", absl::ToDoubleSeconds(o.confined)},
                {"confined_work", flags.confined_work},
                {"touch", o.touch_runs ? "runs" : "pages"},
                {"sampler", SamplerKindName(o.sampler)},
                {"fault_cost_seconds", absl::ToDoubleSeconds(o.costs.hint_fault)},
                {"arm_cost_seconds", absl::ToDoubleSeconds(o.costs.arm_page)},
                {"arm_cost_per_node", o.costs.arm_per_node},
                {"move_cost_seconds", absl::ToDoubleSeconds(o.costs.move_page)},
                {"balance", BalanceModeName(o.mode)},
                {"migrate_bytes_per_second", o.migrate_bytes_per_second},
                {"migrate_threads", o.migrate_threads},
                {"scan", o.scan.window_bytes > 0 ? "window" : "regions"},
                {"scan_window_bytes", o.scan.window_bytes},
                {"scan_stall_budget", o.scan.rate.stall_budget},
                {"scan_probes_per_region", o.scan.rate.probes_per_region},
                {"scan_period_seconds", absl::ToDoubleSeconds(o.scan.period)},
                {"scan_period_max_seconds", absl::ToDoubleSeconds(o.scan.period_max)},
                {"busy_cpus", o.other_busy}};
  auto locality = [&](double v) {
    return r.has_accesses ? nlohmann::json(v) : nlohmann::json(nullptr);
  };
  j["best_definition"] = kBestDefinition;
  j["best_locality"] = locality(r.best_locality);
  j["start_locality"] = locality(r.start_locality);
  j["final_locality"] = locality(r.final_locality);
  j["final_vs_best"] = r.has_accesses && r.best_locality > 0
                           ? nlohmann::json(r.final_locality / r.best_locality)
                           : nlohmann::json(nullptr);
  j["beats_best_by_moving_vcpus"] = r.has_accesses && r.final_locality > r.best_locality + 1e-9;
  j["seconds_to_90pct_of_best"] = Optional(r.seconds_to_90pct_of_best);
  j["best_moving_vcpus_definition"] = kBestMovingVcpusDefinition;
  j["best_moving_vcpus_locality"] = locality(r.best_moving_vcpus_locality);
  j["best_moving_vcpus_nodes"] = r.best_vcpu_nodes;
  j["final_vs_best_moving_vcpus"] =
      r.has_accesses && r.best_moving_vcpus_locality > 0
          ? nlohmann::json(r.final_locality / r.best_moving_vcpus_locality)
          : nlohmann::json(nullptr);
  j["seconds_to_90pct_of_best_moving_vcpus"] = Optional(r.seconds_to_90pct_of_best_moving_vcpus);
  j["guest_bytes"] = r.guest_bytes;
  j["guest_bytes_to_90pct_of_best"] = Optional(r.guest_bytes_to_90pct_of_best);
  j["pages_migrated"] = r.pages_migrated;
  j["bytes_migrated"] = r.pages_migrated * 4096;
  j["min_page_moves"] = r.min_page_moves;
  j["remigrations"] = r.remigrations;
  j["bounces"] = r.bounces;
  j["vcpu_moves"] = r.vcpu_moves;
  j["stall_seconds"] = r.stall_seconds;
  j["stall_share"] = r.stall_share;
  j["balancer_cpu_seconds"] = r.balancer_cpu_seconds;
  if (r.balancer_cpu_seconds_measured) {
    j["balancer_cpu_seconds_measured"] = *r.balancer_cpu_seconds_measured;
  }
  j["periods"] = r.periods;
  j["sampling"] = {{"pages_armed", r.sampler.pages_armed},
                   {"samples", r.sampler.samples},
                   {"reads", r.sampler.reads},
                   {"writes", r.sampler.writes},
                   {"unattributed", r.sampler.unattributed},
                   {"windows", r.sampler.windows},
                   {"coarse_restarts", r.coarse_restarts}};
  nlohmann::json phases = nlohmann::json::array();
  for (const SimPhaseResult& p : r.phases) {
    phases.push_back({{"label", p.label},
                      {"start_seconds", p.start_seconds},
                      {"best_locality", locality(p.best)},
                      {"seconds_to_90pct_of_best", Optional(p.seconds_to_90pct_of_best)},
                      {"best_moving_vcpus_locality", locality(p.best_moving_vcpus)},
                      {"best_moving_vcpus_nodes", p.best_vcpu_nodes},
                      {"seconds_to_90pct_of_best_moving_vcpus",
                       Optional(p.seconds_to_90pct_of_best_moving_vcpus)},
                      {"end_locality", locality(p.end_locality)}});
  }
  j["phases"] = phases;
  j["vcpu_start_nodes"] = r.vcpu_start;
  j["vcpu_end_nodes"] = r.vcpu_end;
  j["pages_per_node"] = r.pages_per_node;
  nlohmann::json series = nlohmann::json::array();
  for (const SimPoint& p : r.series) {
    series.push_back({{"seconds", p.seconds},
                      {"locality", p.locality},
                      {"best", p.best},
                      {"pages_migrated", p.pages_migrated}});
  }
  j["locality_series"] = series;
  j["balance"] = BalancerCountersToJson(r.counters);
  // Measured CPU time differs run to run; the figure above is modelled.
  j["balance"].erase("cpu_seconds");
  j["balance"].erase("move_cpu_seconds");
  return j;
}

std::string Percent(bool known, double v) {
  return known ? absl::StrFormat("%.1f%%", 100 * v) : "-";
}

std::string ToTable(const SimulateFlags& flags, const SimulationOptions& o,
                    const SimulationResult& r) {
  std::string out;
  absl::StrAppend(
      &out, absl::StrFormat(
                "numavm simulate: %s, %d vCPUs, %s on %s, %.0f s (seed %u, first touch %s%s%s)\n",
                flags.workload, o.vcpus, FormatSize(o.memory_bytes), flags.topology_path,
                absl::ToDoubleSeconds(o.seconds), o.seed, flags.first_touch,
                o.touch_runs ? "" : ", each page's toucher drawn on its own",
                o.confined > absl::ZeroDuration()
                    ? absl::StrFormat(", held on vCPU 0's node for the first %.0f s%s",
                                      absl::ToDoubleSeconds(o.confined),
                                      o.held_touch_in_order     ? " (a first touch only, in order)"
                                      : o.held_first_touch_only ? " (a first touch only)"
                                                                : "")
                    : ""));
  absl::StrAppend(&out, absl::StrFormat("scan:      sampler %s, window %s, period %s-%s, fault "
                                        "cost %s; %u pages armed, %u samples\n",
                                        SamplerKindName(o.sampler), FormatSize(o.scan.window_bytes),
                                        absl::FormatDuration(o.scan.period),
                                        absl::FormatDuration(o.scan.period_max),
                                        absl::FormatDuration(o.costs.hint_fault),
                                        r.sampler.pages_armed, r.sampler.samples));
  const bool known = r.has_accesses;
  absl::StrAppend(
      &out, absl::StrFormat("locality:  %s at start -> %s at the end; best %s (%s)\n",
                            Percent(known, r.start_locality), Percent(known, r.final_locality),
                            Percent(known, r.best_locality), kBestDefinition));
  if (known && r.best_moving_vcpus_locality > r.best_locality + 1e-9) {
    absl::StrAppend(
        &out, absl::StrFormat("           %s with vCPUs moved within the nodes' CPUs (nodes %s): "
                              "%s of it at the end, %s\n",
                              Percent(known, r.best_moving_vcpus_locality),
                              absl::StrJoin(r.best_vcpu_nodes, " "),
                              Percent(known, r.final_locality / r.best_moving_vcpus_locality),
                              r.seconds_to_90pct_of_best_moving_vcpus
                                  ? absl::StrFormat("90%% of it after %.0f s",
                                                    *r.seconds_to_90pct_of_best_moving_vcpus)
                                  : std::string("never 90% of it")));
  }
  if (known && r.final_locality > r.best_locality + 1e-9) {
    absl::StrAppend(&out, "           the balancer beat best by moving vCPUs\n");
  }
  absl::StrAppend(
      &out, "converged: ",
      r.seconds_to_90pct_of_best
          ? absl::StrFormat(
                "90%% of best after %.0f s (%s of guest work)", *r.seconds_to_90pct_of_best,
                FormatSize(static_cast<uint64_t>(r.guest_bytes_to_90pct_of_best.value_or(0))))
          : std::string("never reached 90% of best"),
      "\n");
  for (size_t i = 1; i < r.phases.size(); ++i) {
    const SimPhaseResult& p = r.phases[i];
    if (r.phases.size() > 12 && i > 5 && i + 5 < r.phases.size()) {
      if (i == 6) absl::StrAppend(&out, "           ...\n");
      continue;
    }
    absl::StrAppend(&out, absl::StrFormat("           %s at %.0f s: %s\n", p.label, p.start_seconds,
                                          p.seconds_to_90pct_of_best
                                              ? absl::StrFormat("90%% of best again after %.0f s",
                                                                *p.seconds_to_90pct_of_best)
                                              : std::string("never back to 90% of best")));
  }
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "moves:     %u pages migrated (%s), best needs %u; %u re-migrations within 10 s (%u "
          "back), %u vCPU moves\n",
          r.pages_migrated, FormatSize(r.pages_migrated * 4096), r.min_page_moves, r.remigrations,
          r.bounces, r.vcpu_moves));
  absl::StrAppend(
      &out, absl::StrFormat(
                "cost:      %.2f s of vCPU time stalled in sampling faults (%.3f%% of busy time), "
                "balancer CPU %.3f s (modelled)",
                r.stall_seconds, 100 * r.stall_share, r.balancer_cpu_seconds));
  if (r.balancer_cpu_seconds_measured) {
    absl::StrAppend(&out, absl::StrFormat(", %.3f s measured", *r.balancer_cpu_seconds_measured));
  }
  absl::StrAppend(&out, "\n");
  absl::StrAppend(&out, "vCPU nodes: start ", absl::StrJoin(r.vcpu_start, " "), "; end ",
                  absl::StrJoin(r.vcpu_end, " "), "\n");
  absl::StrAppend(&out, ModelMemoryText(r.pages_per_node), "\n");
  return out;
}

}  // namespace

int SimulateCommand(const SimulateFlags& flags) {
  if (flags.report != "table" && flags.report != "json") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unknown report format '", flags.report, "' (want table or json)")));
  }
  absl::StatusOr<SimulationOptions> options = Resolve(flags);
  if (!options.ok()) return Fail(options.status());
  if (!flags.plot.empty()) {
    if (absl::Status s = CheckPlotPath(flags.plot); !s.ok()) return Fail(s);
  }
  absl::StatusOr<Topology> topology = LoadTopologyFile(flags.topology_path);
  if (!topology.ok()) return Fail(topology.status());
  if (options->other_busy.size() == 1) {  // one figure: every node's
    options->other_busy.assign(topology->nodes.size(), options->other_busy[0]);
  }
  absl::StatusOr<SimulationResult> result = Simulate(*options, *topology);
  if (!result.ok()) return Fail(result.status());
  const nlohmann::json report = WithReportEnvelope("simulate", ToJson(flags, *options, *result));
  if (flags.report == "json") {
    std::cout << report.dump(2) << std::endl;
  } else {
    std::cout << ToTable(flags, *options, *result) << std::flush;
  }
  return PlotIfAsked("simulate", report, flags.plot);
}

}  // namespace numavm
