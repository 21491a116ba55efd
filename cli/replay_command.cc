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
#include "cli/run_options.h"

namespace numavm {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "numavm replay: %s\n", std::string(status.message()).c_str());
  return kExitBadInput;
}

// Achieved over oracle; 1 when both are zero.
double Ratio(double achieved, double oracle) {
  if (oracle == 0) return achieved == 0 ? 1.0 : std::numeric_limits<double>::infinity();
  return achieved / oracle;
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
  j["oracle"] = {{"vcpu_nodes", r.oracle.vcpu_nodes},
                 {"access_locality", r.oracle.locality},
                 {"min_page_moves", r.oracle.min_page_moves},
                 {"pages_sampled", r.oracle.pages}};
  j["versus_oracle"] = {{"window_locality_ratio", Ratio(c.window_locality(), r.oracle.locality)},
                        {"page_moves_ratio", Ratio(static_cast<double>(c.pages_migrated),
                                                   static_cast<double>(r.oracle.min_page_moves))}};
  return j;
}

std::string ToTable(const AccessTrace& trace, const ReplayFlags& flags,
                    const ReplayOptions& options, const ReplayResult& r) {
  const BalancerCounters& c = r.counters;
  std::string out;
  absl::StrAppend(&out, absl::StrFormat(
      "numavm replay: %s (%s, %d vCPUs, %s, %u periods over %.1f s, %u samples)\n",
      flags.trace_path, trace.header.payload.empty() ? "?" : trace.header.payload,
      trace.header.vcpus, FormatSize(trace.header.pages * 4096), r.periods,
      absl::ToDoubleSeconds(r.span), trace.sample_count()));
  absl::StrAppend(&out, "model:     ", flags.topology_path, " (", r.pages_per_node.size(),
                  " nodes), first touch ", FirstTouchName(options.first_touch), ", balance ",
                  BalanceModeName(options.mode), "\n");
  absl::StrAppend(&out, "vCPU nodes: start ", absl::StrJoin(r.vcpu_start, " "), "; end ",
                  absl::StrJoin(r.vcpu_end, " "), "\n");
  absl::StrAppend(&out, "balancer:  ", BalancerCountersText(c), "\n");
  absl::StrAppend(&out, absl::StrFormat(
      "           %u re-migrations of a page within 10 s, %u of them back to where it was\n",
      r.remigrations, r.bounces));
  absl::StrAppend(&out, absl::StrFormat(
      "oracle:    access locality %.1f%%, at least %u page moves (%u pages sampled)\n",
      100 * r.oracle.locality, r.oracle.min_page_moves, r.oracle.pages));
  absl::StrAppend(&out, absl::StrFormat(
      "versus oracle: recent locality %.2f x, page moves %.2f x\n",
      Ratio(c.window_locality(), r.oracle.locality),
      Ratio(static_cast<double>(c.pages_migrated), static_cast<double>(r.oracle.min_page_moves))));
  absl::StrAppend(&out, "memory per model node:");
  for (size_t n = 0; n < r.pages_per_node.size(); ++n) {
    absl::StrAppend(&out, " ", n, ":", FormatSize(r.pages_per_node[n] * 4096));
  }
  absl::StrAppend(&out, "\n");
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
  absl::StatusOr<uint64_t> rate = ParseSize(flags.migrate_rate);
  if (!rate.ok()) return Fail(rate.status());
  if (*rate == 0) return Fail(absl::InvalidArgumentError("--migrate-rate must be above 0"));
  options.migrate_bytes_per_second = *rate;
  if (flags.report != "table" && flags.report != "json") {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("unknown report format '", flags.report, "' (want table or json)")));
  }
  absl::StatusOr<Topology> topology = LoadTopologyFile(flags.topology_path);
  if (!topology.ok()) return Fail(topology.status());
  absl::StatusOr<AccessTrace> trace = ReadTraceFile(flags.trace_path);
  if (!trace.ok()) return Fail(trace.status());
  absl::StatusOr<ReplayResult> result = Replay(*trace, *topology, options);
  if (!result.ok()) return Fail(result.status());
  if (flags.report == "json") {
    std::cout << ToJson(*trace, flags, options, *result).dump(2) << std::endl;
  } else {
    std::cout << ToTable(*trace, flags, options, *result) << std::flush;
  }
  return kExitOk;
}

}  // namespace numavm
