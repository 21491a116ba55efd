#include "cli/run_report.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/size.h"
#include "cli/balance_report.h"

namespace numavm {
namespace {

constexpr size_t kMaxProgressPoints = 200;

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

std::string Rate(double bytes_per_second) {
  if (bytes_per_second >= (1ull << 30)) {
    return absl::StrFormat("%.2f GiB/s", bytes_per_second / (1ull << 30));
  }
  return absl::StrFormat("%.1f MiB/s", bytes_per_second / (1ull << 20));
}

// Progress samples thinned to at most kMaxProgressPoints, keeping the last.
nlohmann::json ProgressSeries(const VcpuRecord& v) {
  nlohmann::json series = nlohmann::json::array();
  size_t n = v.progress.size();
  size_t step = n > kMaxProgressPoints ? (n + kMaxProgressPoints - 1) / kMaxProgressPoints : 1;
  for (size_t i = 0; i < n; i += step) {
    series.push_back({{"seconds", Seconds(v.progress[i].at)}, {"bytes", v.progress[i].bytes}});
  }
  if (n > 0 && (n - 1) % step != 0) {
    series.push_back(
        {{"seconds", Seconds(v.progress.back().at)}, {"bytes", v.progress.back().bytes}});
  }
  return series;
}

}  // namespace

nlohmann::json SummaryToJson(const RunSummary& s) {
  const RunOptions& o = *s.options;
  const RunRecord& r = s.outcome.record;
  nlohmann::json j;
  j["payload"] = s.payload;
  j["vcpus"] = o.vm.vcpus;
  j["memory_bytes"] = o.vm.memory_bytes;
  j["backing"] = std::string(BackingName(o.vm.backing));
  j["placement"] = std::string(StaticPlacementName(o.placement));
  j["payload_args"] = o.vm.payload_args;
  j["end"] = std::string(RunEndName(s.outcome.end));
  j["message"] = s.outcome.message;
  j["exit_code"] = s.exit_code;
  j["elapsed_seconds"] = Seconds(s.outcome.elapsed);
  j["startup_seconds"] =
      s.outcome.startup ? nlohmann::json(Seconds(*s.outcome.startup)) : nlohmann::json(nullptr);
  j["host_nodes"] = s.host_nodes;
  j["vm"] = s.vm ? ToJson(*s.vm) : nlohmann::json(nullptr);
  nlohmann::json cells = nlohmann::json::array();
  for (const CellConfig& c : o.vm.cells) {
    cells.push_back({{"memory_bytes", c.memory_bytes}, {"vcpus", c.vcpus}});
  }
  j["cells"] = cells;
  nlohmann::json vcpus = nlohmann::json::array();
  for (size_t i = 0; i < r.vcpus.size(); ++i) {
    const VcpuRecord& v = r.vcpus[i];
    nlohmann::json e;
    e["index"] = i;
    e["bytes"] = v.bytes();
    e["throughput_bytes_per_second"] = v.BytesPerSecond();
    e["exit_status"] = v.exit_status ? nlohmann::json(*v.exit_status) : nlohmann::json(nullptr);
    e["started_seconds"] =
        v.started ? nlohmann::json(Seconds(*v.started)) : nlohmann::json(nullptr);
    e["progress"] = ProgressSeries(v);
    vcpus.push_back(e);
  }
  j["vcpu"] = vcpus;
  nlohmann::json results = nlohmann::json::object();
  for (const ResultEntry& e : r.results) {
    nlohmann::json& entry = results[e.key];
    if (entry.is_null()) entry = {{"sum", 0}, {"per_vcpu", nlohmann::json::object()}};
    entry["sum"] = entry["sum"].get<uint64_t>() + e.value;
    entry["per_vcpu"][std::to_string(e.vcpu)] = e.value;
  }
  j["results"] = results;
  nlohmann::json phases = nlohmann::json::array();
  for (const PhaseMark& p : r.phases) {
    phases.push_back({{"seconds", Seconds(p.at)}, {"vcpu", p.vcpu}, {"name", p.name}});
  }
  j["phases"] = phases;
  if (s.memory) {
    nlohmann::json per_node = nlohmann::json::object();
    for (auto [node, bytes] : s.memory->bytes_per_node) per_node[std::to_string(node)] = bytes;
    j["memory_per_node"] = {{"bytes", per_node},
                            {"not_present_bytes", s.memory->not_present_bytes},
                            {"other_bytes", s.memory->other_bytes}};
  } else {
    j["memory_per_node"] = {{"error", s.memory_error}};
  }
  const SamplingSummary& sm = s.sampling;
  j["sampling"] = {{"sampler", sm.sampler},
                   {"scan", sm.window_bytes > 0 ? "window" : "regions"},
                   {"window_bytes", sm.window_bytes},
                   {"rate_bytes_per_second", sm.rate_bytes_per_second},
                   {"rate_ceiling_bytes_per_second", sm.ceiling_bytes_per_second},
                   {"probes_per_region", sm.probes_per_region},
                   {"probe_run_pages", sm.probe_run_pages},
                   {"revisits", sm.revisits},
                   {"regions_passed", sm.regions_passed},
                   {"coarse_restarts", sm.coarse_restarts},
                   {"fault_cost_seconds", Seconds(sm.fault_cost)},
                   {"host_seconds_per_probe", Seconds(sm.host_cost_per_probe)},
                   {"host_seconds_per_call", Seconds(sm.host_cost_per_call)},
                   {"arm_calls", sm.arm_calls},
                   {"host_seconds_per_call_mean", Seconds(sm.host_cost_per_call_mean())},
                   {"host_cpu_seconds",
                    {{"arm", Seconds(sm.host_arm)},
                     {"collect", Seconds(sm.host_collect)},
                     {"decide", Seconds(sm.host_decide)},
                     {"decide_view", Seconds(sm.host_decide_view)},
                     {"migrate", Seconds(sm.host_migrate)}}},
                   {"stall_share", sm.stall_share},
                   {"stall_budget", sm.stall_budget},
                   {"period_seconds", Seconds(sm.period)},
                   {"pages_armed", sm.stats.pages_armed},
                   {"samples", sm.stats.samples},
                   {"reads", sm.stats.reads},
                   {"writes", sm.stats.writes},
                   {"unattributed", sm.stats.unattributed},
                   {"inferred_vcpu", sm.stats.inferred},
                   {"cell_vcpu", sm.stats.by_cell},
                   {"windows", sm.stats.windows},
                   {"per_vcpu", sm.stats.per_vcpu},
                   {"cpu_seconds", Seconds(sm.cpu_time)},
                   {"idle_periods", sm.idle_periods},
                   {"period_max_seconds", Seconds(sm.period_max)},
                   {"final_period_seconds", Seconds(sm.final_period)},
                   {"period_changes", sm.period_changes},
                   {"ring_overruns", sm.stats.ring_overruns},
                   {"error", sm.error}};
  if (sm.sampler == "evict") {
    const SamplerStats::EvictSteps& e = sm.stats.evict;
    j["sampling"]["evict_cpu_seconds"] = {{"protect", Seconds(e.protect)},
                                          {"read", Seconds(e.read)},
                                          {"query", Seconds(e.query)},
                                          {"free", Seconds(e.free)}};
  }
  const BalanceSummary& b = s.balance;
  j["balance"] = BalancerCountersToJson(b.counters);
  j["balance"]["mode"] = b.mode;
  j["balance"]["error"] = b.error;
  j["balance"]["page_moves"] = b.page_moves;
  j["balance"]["move_windows"] = b.move_windows;
  j["balance"]["vcpu_move_waits"] = b.vcpu_move_waits;
  j["placement_locality"] =
      s.placement_locality ? nlohmann::json(*s.placement_locality) : nlohmann::json(nullptr);
  nlohmann::json series = nlohmann::json::array();
  for (const PlacementPoint& p : s.placement_series) {
    nlohmann::json per_node = nlohmann::json::object();
    for (auto [node, bytes] : p.bytes_per_node) per_node[std::to_string(node)] = bytes;
    series.push_back(
        {{"seconds", p.seconds},
         {"placement_locality", p.locality ? nlohmann::json(*p.locality) : nlohmann::json(nullptr)},
         {"guest_bytes", p.guest_bytes},
         {"bytes_per_node", per_node},
         {"vcpu_nodes", p.vcpu_nodes}});
  }
  j["placement_series"] = series;
  j["console_lines"] = r.console;
  j["notes"] = s.notes;
  return j;
}

std::string SummaryToTable(const RunSummary& s) {
  const RunOptions& o = *s.options;
  const RunRecord& r = s.outcome.record;
  std::string out;
  absl::StrAppend(&out, "numavm run: ", s.payload, "  (", o.vm.vcpus, " vCPUs, ",
                  FormatSize(o.vm.memory_bytes), " ", BackingName(o.vm.backing), ", placement ",
                  StaticPlacementName(o.placement), ")\n");
  absl::StrAppend(&out, "end:       ", RunEndName(s.outcome.end), " - ", s.outcome.message,
                  " (exit ", s.exit_code, ")\n");
  if (s.sampling.sampler != "off") {
    absl::StrAppend(&out, "verdict:   ", BalanceVerdict(s.balance.counters, o.balance.mode), "\n");
  }
  if (o.vm.cells.size() > 1) {  // guest NUMA (--cell): the guest sees several nodes
    absl::StrAppend(&out, "cells:    ");
    for (size_t c = 0; c < o.vm.cells.size(); ++c) {
      absl::StrAppend(&out, c == 0 ? " " : "; ", "cell ", c, ": ",
                      FormatSize(o.vm.cells[c].memory_bytes), ", vCPUs ",
                      absl::StrJoin(o.vm.cells[c].vcpus, ","));
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, absl::StrFormat("elapsed:   %.3f s", Seconds(s.outcome.elapsed)));
  if (s.outcome.startup) {
    absl::StrAppend(&out, absl::StrFormat("; start-up to first guest instruction %.1f ms",
                                          Seconds(*s.outcome.startup) * 1e3));
  }
  absl::StrAppend(
      &out, "\n\n",
      absl::StrFormat("%-5s %14s %14s %6s %6s\n", "vCPU", "bytes", "throughput", "exit", "node"));
  const std::vector<int>& vcpu_nodes = s.balance.counters.vcpu_nodes;  // node indices
  for (size_t i = 0; i < r.vcpus.size(); ++i) {
    const VcpuRecord& v = r.vcpus[i];
    // Where the balancer last saw it run (a host node id), '-' if never.
    std::string node = "-";
    if (i < vcpu_nodes.size() && vcpu_nodes[i] >= 0 &&
        vcpu_nodes[i] < static_cast<int>(s.host_nodes.size())) {
      node = absl::StrCat(s.host_nodes[vcpu_nodes[i]]);
    }
    absl::StrAppend(
        &out,
        absl::StrFormat("%-5d %14s %14s %6s %6s\n", static_cast<int>(i), FormatSize(v.bytes()),
                        Rate(v.BytesPerSecond()),
                        v.exit_status ? absl::StrCat(*v.exit_status) : std::string("-"), node));
  }
  std::map<std::string, uint64_t> sums;
  for (const ResultEntry& e : r.results) sums[e.key] += e.value;
  if (!sums.empty()) {
    absl::StrAppend(&out, "\nresults:  ");
    for (const auto& [key, value] : sums) absl::StrAppend(&out, " ", key, "=", value);
    absl::StrAppend(&out, "\n");
  }
  const SamplingSummary& sm = s.sampling;
  absl::StrAppend(&out, "\nsampling:  ", sm.sampler);
  if (sm.sampler != "off") {
    const std::string scan =
        sm.window_bytes > 0
            ? absl::StrFormat("window %s every %s", FormatSize(sm.window_bytes),
                              absl::FormatDuration(sm.period))
            : absl::StrFormat(
                  "regions, %d probes each%s, at %s/s (ceiling %s/s)", sm.probes_per_region,
                  sm.probe_run_pages > 1 ? absl::StrFormat(" in runs of %u", sm.probe_run_pages)
                                         : std::string(),
                  FormatSize(static_cast<uint64_t>(sm.rate_bytes_per_second)),
                  FormatSize(static_cast<uint64_t>(sm.ceiling_bytes_per_second)));
    // PROT_NONE faults do not say whether the access was a read or a write.
    const std::string kinds =
        sm.stats.reads + sm.stats.writes == 0 && sm.stats.samples > 0
            ? std::string("reads and writes not told apart")
            : absl::StrFormat("%u reads, %u writes", sm.stats.reads, sm.stats.writes);
    absl::StrAppend(&out, absl::StrFormat(" (%s): %u pages armed, %u samples (%s, %u "
                                          "unattributed), %.3f s CPU",
                                          scan, sm.stats.pages_armed, sm.stats.samples, kinds,
                                          sm.stats.unattributed, Seconds(sm.cpu_time)));
    absl::StrAppend(
        &out, absl::StrFormat(
                  "\n           fault round trip %.1f us, host time %.1f us per probe, %.1f us "
                  "per arming call lately (%.1f us over the run's %u calls); sampling costs "
                  "%.3f%% of the vCPUs' busy time (budget %.1f%%)",
                  absl::ToDoubleMicroseconds(sm.fault_cost),
                  absl::ToDoubleMicroseconds(sm.host_cost_per_probe),
                  absl::ToDoubleMicroseconds(sm.host_cost_per_call),
                  absl::ToDoubleMicroseconds(sm.host_cost_per_call_mean()), sm.arm_calls,
                  100 * sm.stall_share, 100 * sm.stall_budget));
    absl::StrAppend(
        &out,
        absl::StrFormat("\n           sampling thread CPU: arming %.3f s, collecting "
                        "%.3f s, deciding %.3f s (%.3f s of it in the view's calls), "
                        "migrating %.3f s",
                        Seconds(sm.host_arm), Seconds(sm.host_collect), Seconds(sm.host_decide),
                        Seconds(sm.host_decide_view), Seconds(sm.host_migrate)));
    if (sm.period_max > sm.period) {
      absl::StrAppend(&out, "\n           adaptive period ", absl::FormatDuration(sm.period), "-",
                      absl::FormatDuration(sm.period_max), ": ended at ",
                      absl::FormatDuration(sm.final_period), " after ", sm.period_changes,
                      " changes");
    }
    if (!sm.stats.per_vcpu.empty()) {
      absl::StrAppend(&out, "\n           per vCPU:");
      for (uint64_t n : sm.stats.per_vcpu) absl::StrAppend(&out, " ", n);
    }
  }
  if (!sm.error.empty()) absl::StrAppend(&out, "\n           stopped early: ", sm.error);
  absl::StrAppend(&out, "\n");
  const BalanceSummary& b = s.balance;
  if (sm.sampler != "off") {
    absl::StrAppend(&out, "balance:   ", b.mode);
    absl::StrAppend(&out, ": ", BalancerCountersText(b.counters));
    if (!b.error.empty()) absl::StrAppend(&out, "\n           stopped early: ", b.error);
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\nguest memory per host node (move_pages):\n");
  if (s.memory) {
    uint64_t resident = 0;
    for (auto [node, bytes] : s.memory->bytes_per_node) resident += bytes;
    for (auto [node, bytes] : s.memory->bytes_per_node) {
      absl::StrAppend(
          &out, absl::StrFormat("  node %-3d %12s  %5.1f%% of resident\n", node, FormatSize(bytes),
                                resident ? 100.0 * bytes / resident : 0.0));
    }
    absl::StrAppend(
        &out, absl::StrFormat("  %-8s %12s\n", "absent", FormatSize(s.memory->not_present_bytes)));
  } else {
    absl::StrAppend(&out, "  unavailable: ", s.memory_error, "\n");
  }
  if (s.placement_locality) {
    absl::StrAppend(&out, absl::StrFormat("placement locality: %.1f%% of the memory the payload "
                                          "declared per vCPU is on its vCPU's node\n",
                                          100 * *s.placement_locality));
  }
  for (const std::string& note : s.notes) absl::StrAppend(&out, "note: ", note, "\n");
  return out;
}

}  // namespace numavm
