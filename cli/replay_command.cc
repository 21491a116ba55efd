#include "cli/replay_command.h"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "balancer/replay/replay.h"
#include "balancer/topology/topology_file.h"
#include "base/size.h"
#include "cli/balance_report.h"
#include "cli/exit_codes.h"
#include "cli/report_envelope.h"
#include "cli/report_plot.h"
#include "cli/run_options.h"

namespace numavm {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "numavm replay: %s\n", std::string(status.message()).c_str());
  return kExitBadInput;
}

// Achieved over best; 1 when both are zero.
double Ratio(double achieved, double best) {
  if (best == 0) return achieved == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return achieved / best;
}

nlohmann::json ToJson(const AccessTrace& trace, const ReplayFlags& flags,
                      const ReplayOptions& options, const ReplayResult& r) {
  const BalancerCounters& c = r.counters;
  nlohmann::json j;
  j["trace"] = {{"path", flags.trace_path},
                {"payload", trace.header.payload},
                {"sampler", trace.header.sampler},
                {"vcpus", trace.header.vcpus},
                {"guest_bytes", trace.header.pages * 4096},
                {"periods", r.periods},
                {"samples", trace.sample_count()},
                {"span_seconds", absl::ToDoubleSeconds(r.span)}};
  j["model"] = {{"topology", flags.topology_path},
                {"first_touch", FirstTouchName(options.first_touch)},
                {"balance", BalanceModeName(options.mode)},
                {"vcpu_start_nodes", r.vcpu_start},
                {"vcpu_end_nodes", r.vcpu_end},
                {"pages_per_node", r.pages_per_node}};
  j["balance"] = BalancerCountersToJson(c);
  j["balance"]["remigrations_within_10s"] = r.remigrations;
  j["balance"]["bounces_within_10s"] = r.bounces;
  j["best"] = {{"definition", kReplayBestDefinition},
               {"vcpu_nodes", r.best.vcpu_nodes},
               {"locality", r.best.locality},
               {"min_page_moves", r.best.min_page_moves},
               {"pages_sampled", r.best.pages}};
  j["ground_truth"] = {{"definition",
                        "share of the trace's sampled accesses (per page and vCPU) local with "
                        "pages and vCPUs where the model has them"},
                       {"start_locality", r.start_locality},
                       {"final_locality", r.final_locality},
                       {"seconds_to_90pct_of_best",
                        r.seconds_to_90pct_of_best ? nlohmann::json(*r.seconds_to_90pct_of_best)
                                                   : nlohmann::json(nullptr)}};
  nlohmann::json series = nlohmann::json::array();
  for (const LocalityPoint& p : r.series) {
    series.push_back(
        {{"seconds", p.seconds}, {"locality", p.locality}, {"pages_migrated", p.pages_migrated}});
  }
  j["ground_truth"]["locality_series"] = series;
  j["versus_best"] = {{"final_locality_ratio", Ratio(r.final_locality, r.best.locality)},
                      {"page_moves_ratio", Ratio(static_cast<double>(r.counters.pages_migrated),
                                                 static_cast<double>(r.best.min_page_moves))},
                      {"beats_best_by_moving_vcpus", r.final_locality > r.best.locality + 1e-9}};
  return j;
}

std::string ToTable(const AccessTrace& trace, const ReplayFlags& flags,
                    const ReplayOptions& options, const ReplayResult& r) {
  const BalancerCounters& c = r.counters;
  std::string out;
  absl::StrAppend(
      &out,
      absl::StrFormat("numavm replay: %s (%s, %d vCPUs, %s, %u periods over %.1f s, %u samples)\n",
                      flags.trace_path, trace.header.payload.empty() ? "?" : trace.header.payload,
                      trace.header.vcpus, FormatSize(trace.header.pages * 4096), r.periods,
                      absl::ToDoubleSeconds(r.span), trace.sample_count()));
  absl::StrAppend(&out, "model:     ", flags.topology_path, " (", r.pages_per_node.size(),
                  " nodes), first touch ", FirstTouchName(options.first_touch), ", balance ",
                  BalanceModeName(options.mode), "\n");
  absl::StrAppend(&out, "vCPU nodes: start ", absl::StrJoin(r.vcpu_start, " "), "; end ",
                  absl::StrJoin(r.vcpu_end, " "), "\n");
  absl::StrAppend(&out, "balancer:  ", BalancerCountersText(c), "\n");
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "           %u re-migrations of a page within 10 s, %u of them back to where it was\n",
          r.remigrations, r.bounces));
  absl::StrAppend(
      &out, absl::StrFormat(
                "best:      locality %.1f%% (%s), at least %u page moves (%u pages sampled)\n",
                100 * r.best.locality, kReplayBestDefinition, r.best.min_page_moves, r.best.pages));
  absl::StrAppend(
      &out, absl::StrFormat(
                "ground truth: locality %.1f%% at start -> %.1f%% at the end (the trace's accesses "
                "weighed against the model's placement); %s\n",
                100 * r.start_locality, 100 * r.final_locality,
                r.seconds_to_90pct_of_best
                    ? absl::StrFormat("90%% of best after %.1f s", *r.seconds_to_90pct_of_best)
                    : std::string("never 90% of best")));
  absl::StrAppend(
      &out,
      absl::StrFormat(
          "versus best: locality %.2f x, page moves %.2f x%s\n",
          Ratio(r.final_locality, r.best.locality),
          Ratio(static_cast<double>(c.pages_migrated), static_cast<double>(r.best.min_page_moves)),
          r.final_locality > r.best.locality + 1e-9 ? " (beaten by moving vCPUs)" : ""));
  absl::StrAppend(&out, ModelMemoryText(r.pages_per_node), "\n");
  return out;
}

}  // namespace

int ReplayCommand(const ReplayFlags& flags) {
  ReplayOptions options;
  absl::StatusOr<FirstTouch> first_touch = ParseFirstTouch(flags.first_touch);
  if (!first_touch.ok()) return Fail(first_touch.status());
  options.first_touch = *first_touch;
  absl::StatusOr<BalanceMode> mode = ParseBalanceMode(flags.balance);
  if (!mode.ok()) return Fail(mode.status());
  options.mode = *mode;
  absl::StatusOr<uint64_t> rate = ParseMigrateRate("--migrate-rate", flags.migrate_rate);
  if (!rate.ok()) return Fail(rate.status());
  options.migrate_bytes_per_second = *rate;
  if (flags.report != "table" && flags.report != "json") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unknown report format '", flags.report, "' (want table or json)")));
  }
  if (!flags.plot.empty()) {
    if (absl::Status s = CheckPlotPath(flags.plot); !s.ok()) return Fail(s);
  }
  absl::StatusOr<Topology> topology = LoadTopologyFile(flags.topology_path);
  if (!topology.ok()) return Fail(topology.status());
  absl::StatusOr<AccessTrace> trace = ReadTraceFile(flags.trace_path);
  if (!trace.ok()) return Fail(trace.status());
  absl::StatusOr<ReplayResult> result = Replay(*trace, *topology, options);
  if (!result.ok()) return Fail(result.status());
  const nlohmann::json report =
      WithReportEnvelope("replay", ToJson(*trace, flags, options, *result));
  if (flags.report == "json") {
    std::cout << report.dump(2) << std::endl;
  } else {
    std::cout << ToTable(*trace, flags, options, *result) << std::flush;
  }
  return PlotIfAsked("replay", report, flags.plot);
}

}  // namespace numavm
