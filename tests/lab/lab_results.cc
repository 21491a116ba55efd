#include "tests/lab/lab_results.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "balancer/report/svg_plot.h"
#include "base/size.h"
#include "tests/lab/report_json.h"

namespace numavm::lab {
namespace {

bool SameCase(const LabRun& a, const LabRun& b) {
  return a.nodes == b.nodes && a.workload == b.workload && a.mode == b.mode && a.vcpus == b.vcpus;
}

std::string UpperMode(const std::string& m) {
  std::string out = m;
  for (char& c : out) c = static_cast<char>(std::toupper(c));
  return out;
}

}  // namespace

double ConvergenceStart(const LabRun& run) {
  double start = run.widened.value_or(0);
  if (!run.report.is_object() || !Member(run.report, "phases").is_array()) return start;
  for (const auto& p : Member(run.report, "phases")) {
    if (p.value("name", std::string()) == "run") {
      start = std::max(start, p.value("seconds", 0.0));
      break;
    }
  }
  return start;
}

namespace {

// Each reading of the run's placement series after its convergence start
// while every vCPU ran: seconds since the start, guest bytes since it, and
// the placement locality (empty where the reading has none).
template <typename Visit>
void ForEachReading(const LabRun& run, Visit visit) {
  if (!run.report.is_object()) return;
  const nlohmann::json& series = Member(run.report, "placement_series");
  if (!series.is_array()) return;
  const double start = ConvergenceStart(run);
  uint64_t bytes_at_start = 0;
  for (const auto& p : series) {
    if (!AllVcpusRunning(p)) break;
    const double t = p.value("seconds", 0.0);
    const uint64_t bytes = p.value("guest_bytes", uint64_t{0});
    if (t <= start) {
      bytes_at_start = bytes;
      continue;
    }
    visit(t - start, bytes > bytes_at_start ? bytes - bytes_at_start : 0,
          Number(Member(p, "placement_locality")));
  }
}

}  // namespace

std::optional<Reached> PlacementReached(const LabRun& run, double target) {
  std::optional<Reached> held;
  ForEachReading(run, [&](double t, uint64_t bytes, std::optional<double> v) {
    if (!v || *v < target) {
      held.reset();
    } else if (!held) {
      held = Reached{t, bytes};
    }
  });
  return held;
}

std::optional<double> PlacementFirstReached(const LabRun& run, double target) {
  // The readings before the first one under `target` may still show what
  // the lab forced (every vCPU beside all the memory on node 0, before
  // the balancer first moves a vCPU away from it); they count only if the
  // placement never falls under it (HARD).
  std::optional<double> first, after_dip;
  bool dipped = false;
  ForEachReading(run, [&](double t, uint64_t, std::optional<double> v) {
    if (!v) return;
    if (*v < target) {
      dipped = true;
    } else if (!dipped) {
      if (!first) first = t;
    } else if (!after_dip) {
      after_dip = t;
    }
  });
  return dipped ? after_dip : first;
}

std::optional<uint64_t> BytesBeforeLocality(const LabRun& run, double target) {
  const nlohmann::json& series = Member(Member(run.report, "balance"), "locality_series");
  std::optional<double> when;
  for (const auto& p : series) {
    if (p.value("locality", 0.0) >= target) {
      when = p.value("seconds", 0.0);
      break;
    }
  }
  if (!when) return std::nullopt;
  uint64_t bytes = 0;
  for (const auto& v : Member(run.report, "vcpu")) {
    uint64_t last = 0;
    for (const auto& p : Member(v, "progress")) {
      if (p.value("seconds", 0.0) > *when) break;
      last = p.value("bytes", uint64_t{0});
    }
    bytes += last;
  }
  return bytes;
}

std::string LabTable(const std::vector<LabRun>& all) {
  // One row per case, the last run of it (a re-run replaces an earlier
  // one), ordered by nodes, workload as first seen, and mode.
  static const std::vector<std::string> kModes = {
      "off",           "off-anon",     "hard",       "inverse",      "numavm",
      "numavm-anon",   "numavm-evict", "numavm-thp", "numavm-extra", "numavm-window",
      "kernel",        "kernel-thp",   "numad",      "churn",        "churn-protected",
      "churn-unmapped"};
  auto mode_rank = [](const std::string& m) {
    auto it = std::find(kModes.begin(), kModes.end(), m);
    return it == kModes.end() ? kModes.size() : static_cast<size_t>(it - kModes.begin());
  };
  std::vector<std::string> workloads;
  for (const LabRun& r : all) {
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end()) {
      workloads.push_back(r.workload);
    }
  }
  std::vector<LabRun> runs;
  for (const LabRun& r : all) {
    std::erase_if(runs, [&](const LabRun& o) { return SameCase(o, r); });
    runs.push_back(r);
  }
  std::stable_sort(runs.begin(), runs.end(), [&](const LabRun& a, const LabRun& b) {
    const auto wa = std::find(workloads.begin(), workloads.end(), a.workload);
    const auto wb = std::find(workloads.begin(), workloads.end(), b.workload);
    return std::make_tuple(a.nodes, wa, mode_rank(a.mode), a.vcpus) <
           std::make_tuple(b.nodes, wb, mode_rank(b.mode), b.vcpus);
  });
  // HARD's placement is the yardstick: time and guest work until a mode's
  // placement reaches 90% of it.
  std::map<std::pair<int, std::string>, double> hard, hard_speed;
  auto speed = [](const LabRun& r) {
    double s = 0;
    if (r.report.is_object() && Member(r.report, "vcpu").is_array()) {
      for (const auto& v : Member(r.report, "vcpu"))
        s += v.value("throughput_bytes_per_second", 0.0);
    }
    return s;
  };
  for (const LabRun& r : runs) {
    if (r.mode == "hard" && r.placement) hard[{r.nodes, r.workload}] = *r.placement;
    if (r.mode == "hard" && speed(r) > 0) hard_speed[{r.nodes, r.workload}] = speed(r);
  }
  // "s to 90%" counts from the last rise past 90% of HARD (the placement
  // held to the end); "first 90%" from the first reading past it, which a
  // balancer whose scheduler later swaps vCPUs across nodes for a reading
  // or two (the kernel's) reaches well before.
  std::string out = absl::StrFormat(
      "%-5s %-12s %-13s %7s %7s %9s %9s %11s %9s %11s %11s %7s %7s %6s %s\n", "nodes", "workload",
      "mode", "placed", "access", "s to 90%", "first 90%", "GiB to 90%", "migrated", "pte updates",
      "hint faults", "cpu s", "speed", "lab x", "notes");
  for (const LabRun& r : runs) {
    auto pct = [](std::optional<double> v) {
      return v ? absl::StrFormat("%.1f%%", 100 * *v) : std::string("-");
    };
    std::string secs = "-", first = "-", gib = "-";
    auto it = hard.find({r.nodes, r.workload});
    if (it != hard.end() && r.report.is_object()) {
      std::optional<Reached> at = PlacementReached(r, 0.9 * it->second);
      secs = at ? absl::StrFormat("%.0f", at->seconds) : "never";
      std::optional<double> once = PlacementFirstReached(r, 0.9 * it->second);
      first = once ? absl::StrFormat("%.0f", *once) : "never";
      gib = at ? absl::StrFormat("%.2f", at->guest_bytes / double(1ull << 30)) : "never";
    }
    auto counter = [&](const char* k) {
      auto c = r.counters.find(k);
      return c == r.counters.end() ? std::string("-") : absl::StrCat(c->second);
    };
    std::string hints = counter("numa_hint_faults");
    if (r.counters.count("numa_hint_faults") && r.counters.at("numa_hint_faults") > 0) {
      absl::StrAppend(
          &hints, absl::StrFormat(" (%.0f%%)", 100.0 * r.counters.count("numa_hint_faults_local") *
                                                   r.counters.at("numa_hint_faults_local") /
                                                   r.counters.at("numa_hint_faults")));
    }
    std::string rel = "-";
    if (auto h = hard_speed.find({r.nodes, r.workload}); h != hard_speed.end() && speed(r) > 0) {
      rel = absl::StrFormat("%.2f x", speed(r) / h->second);
    }
    std::string notes;
    if (!r.report.is_object()) notes += "no result: the lab failed every time ";
    if (r.report.is_object() && r.exit_code != 0) notes += absl::StrCat("exit ", r.exit_code, " ");
    if (absl::StartsWith(r.mode, "kernel") && r.counters.count("numa_pte_updates") &&
        r.counters.at("numa_pte_updates") == 0) {
      notes += "the kernel did not scan ";
    }
    if (r.kernel_faults && !absl::StartsWith(r.mode, "numavm")) {
      notes += absl::StrFormat("access: the kernel's recent NUMA faults, %u of %u local ",
                               r.kernel_faults->first, r.kernel_faults->second);
    }
    if (absl::StartsWith(r.mode, "numavm") && r.report.is_object()) {
      notes +=
          absl::StrCat("numavm moved ", Count(Member(r.report, "balance"), "pages_migrated"),
                       ", re-migrated ", Count(Member(r.report, "balance"), "remigrations"), " ");
      const nlohmann::json& sm = Member(r.report, "sampling");
      if (sm.is_object() && sm.value("scan", std::string()) == "regions" &&
          sm.value("sampler", std::string("off")) != "off") {
        // What the scan could afford here: its budget and what a probe cost.
        // The time per arming call (reports since 2026-12-06) is what
        // `numavm simulate --arm-cost` takes: the run's mean where the
        // report has it, else the last periods' smoothed figure.
        const char* per_call_key = sm.contains("host_seconds_per_call_mean")
                                       ? "host_seconds_per_call_mean"
                                       : "host_seconds_per_call";
        const std::string per_call =
            sm.contains(per_call_key)
                ? absl::StrFormat(", %.0f us/call", 1e6 * sm.value(per_call_key, 0.0))
                : std::string();
        notes += absl::StrFormat(
            "(budget %.0f%%, %.0f us/probe host%s, %.0f us/fault, scan %.1f MiB/s) ",
            100 * sm.value("stall_budget", 0.0), 1e6 * sm.value("host_seconds_per_probe", 0.0),
            per_call, 1e6 * sm.value("fault_cost_seconds", 0.0),
            sm.value("rate_bytes_per_second", 0.0) / (1 << 20));
        // Where the sampling thread's CPU went (reports since 2026-12-02).
        const nlohmann::json& split = Member(sm, "host_cpu_seconds");
        if (split.is_object()) {
          notes += absl::StrFormat("(sampler CPU: arm %.1f s, collect %.1f s, decide %.1f s",
                                   split.value("arm", 0.0), split.value("collect", 0.0),
                                   split.value("decide", 0.0));
          // Of deciding, the placement view's calls (reports since 2026-12-06).
          if (split.contains("decide_view")) {
            notes += absl::StrFormat(" (view calls %.1f s)", split.value("decide_view", 0.0));
          }
          const uint64_t run = sm.value("probe_run_pages", uint64_t{1});
          notes += run > 1 ? absl::StrFormat("; probes in runs of %u) ", run) : ") ";
        }
        const nlohmann::json& ev = Member(sm, "evict_cpu_seconds");
        if (ev.is_object()) {
          notes += absl::StrFormat("(evict CPU: protect %.1f s, read %.1f, query %.1f, free %.1f) ",
                                   ev.value("protect", 0.0), ev.value("read", 0.0),
                                   ev.value("query", 0.0), ev.value("free", 0.0));
        }
      }
      // What a page move cost in wall time, and where (reports since
      // 2026-12-02, evening).
      const nlohmann::json& mt = Member(Member(r.report, "balance"), "move_seconds");
      if (mt.is_object() && mt.value("pages", uint64_t{0}) > 0) {
        const double pages = static_cast<double>(mt.value("pages", uint64_t{0}));
        const double stage = mt.value("stage", 0.0), move = mt.value("move", 0.0),
                     query = mt.value("query", 0.0), unstage = mt.value("unstage", 0.0);
        notes += absl::StrFormat(
            "(moves: %.0f us/page wall - stage %.0f, move %.0f, query %.0f, unstage %.0f; %u "
            "batches) ",
            1e6 * (stage + move + query + unstage) / pages, 1e6 * stage / pages, 1e6 * move / pages,
            1e6 * query / pages, 1e6 * unstage / pages, mt.value("batches", uint64_t{0}));
      }
    }
    if (r.workload == "linux" && r.report.is_object()) {
      if (r.guest_mib_per_second) {
        notes += absl::StrFormat("guest numabench %.1f MiB/s; ", *r.guest_mib_per_second);
      }
      const nlohmann::json& b = Member(r.report, "balance");
      const nlohmann::json& sm = Member(r.report, "sampling");
      std::optional<double> access = Number(Member(b, "access_locality"));
      notes += absl::StrFormat(
          "numavm moved %u, access %s (%u samples, %u unattributed, %u to a blocked vCPU, %u "
          "by cell); ",
          Count(b, "pages_migrated"),
          access ? absl::StrFormat("%.1f%%", 100 * *access) : std::string("-"),
          Count(sm, "samples"), Count(sm, "unattributed"), Count(sm, "inferred_vcpu"),
          Count(sm, "cell_vcpu"));
      auto g = [&](const char* k) {
        auto it = r.guest_counters.find(k);
        return it == r.guest_counters.end() ? uint64_t{0} : it->second;
      };
      if (!r.guest_counters.empty()) {
        notes += absl::StrFormat(
            "the guest's balancing: %u PTE updates, %u hint faults (%u local), %u migrated ",
            g("numa_pte_updates"), g("numa_hint_faults"), g("numa_hint_faults_local"),
            g("numa_pages_migrated"));
      }
    }
    if (r.workload == "verify" && r.report.is_object()) {
      notes += absl::StrCat(
          "mismatches ", r.mismatches ? absl::StrCat(*r.mismatches) : std::string("not reported"),
          ", ", r.vcpus, " vCPUs, ",
          absl::StrFormat("%.0f", r.report.value("elapsed_seconds", 0.0)), " s ");
    }
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%-5d %-12s %-13s %7s %7s %9s %9s %11s %9u %11s %11s %7s %7s %6d %s\n", r.nodes,
            r.workload, UpperMode(r.mode), pct(r.placement), pct(r.access), secs, first, gib,
            r.pages_migrated, counter("numa_pte_updates"), hints,
            r.balancer_cpu_seconds >= 0 ? absl::StrFormat("%.2f", r.balancer_cpu_seconds) : "-",
            rel, r.lab_failures, notes));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> LabPlots(const std::vector<LabRun>& all) {
  std::map<std::pair<int, std::string>, PlotSpec> plots;
  for (const LabRun& r : all) {
    if (!r.report.is_object() || !Member(r.report, "placement_series").is_array()) continue;
    PlotSpec& spec = plots[{r.nodes, r.workload}];
    spec.title =
        absl::StrFormat("%s on %d nodes: declared memory on its vCPUs' nodes", r.workload, r.nodes);
    spec.y_label = "placement locality";
    spec.x_label = "seconds since the first touch ended";
    PlotSeries s{UpperMode(r.mode), {}, r.mode == "hard"};
    const double start = ConvergenceStart(r);
    for (const auto& p : Member(r.report, "placement_series")) {
      if (!AllVcpusRunning(p)) break;
      std::optional<double> v = Number(Member(p, "placement_locality"));
      const double t = p.value("seconds", 0.0) - start;
      if (v && t > 0) s.points.emplace_back(t, *v);
    }
    std::erase_if(spec.series, [&](const PlotSeries& o) { return o.name == s.name; });
    spec.series.push_back(std::move(s));
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, spec] : plots) {
    out.emplace_back(absl::StrCat(key.second, "-", key.first, "node.svg"), RenderSvg(spec));
  }
  return out;
}

}  // namespace numavm::lab
