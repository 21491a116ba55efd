#include "tests/lab/lab_results.h"

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "balancer/report/svg_plot.h"
#include "base/size.h"

namespace numavm::lab {
namespace {

// j[key] when j is an object that has it, else null: never an insertion,
// never operator[] on a non-object (undefined behaviour in nlohmann::json).
const nlohmann::json& Member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::optional<double> Number(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  return std::nullopt;
}

uint64_t Field(absl::string_view line, absl::string_view key) {
  for (absl::string_view f : absl::StrSplit(line, ' ')) {
    if (absl::ConsumePrefix(&f, key) && absl::ConsumePrefix(&f, "=")) {
      uint64_t v = 0;
      if (absl::SimpleAtoi(f, &v)) return v;
    }
  }
  return 0;
}

bool SameCase(const LabRun& a, const LabRun& b) {
  return a.nodes == b.nodes && a.workload == b.workload && a.mode == b.mode && a.vcpus == b.vcpus;
}

std::string UpperMode(const std::string& m) {
  std::string out = m;
  for (char& c : out) c = static_cast<char>(std::toupper(c));
  return out;
}

// A placement sample taken while every vCPU still ran: once one has ended
// (node -1) the "declared memory on its vCPUs' nodes" of the rest is not
// the VM's, and a vCPU left alone can look perfectly placed.
bool AllVcpusRunning(const nlohmann::json& sample) {
  if (!sample.is_object() || !sample.contains("vcpu_nodes")) return true;
  const nlohmann::json& nodes = sample.at("vcpu_nodes");
  if (!nodes.is_array()) return true;
  for (const auto& n : nodes) {
    if (!n.is_number_integer() || n.get<int>() < 0) return false;
  }
  return true;
}

}  // namespace

std::vector<LabRun> ParseLabLog(const std::string& text) {
  std::vector<LabRun> runs;
  std::map<std::tuple<int, std::string, std::string>, int> failures;
  std::map<std::pair<std::string, std::string>, double> widened;  // until its LAB-JSON
  LabRun guest;  // what a Linux guest printed, until its LAB-JSON
  int nodes = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    absl::string_view l = absl::StripTrailingAsciiWhitespace(line);
    if (absl::StartsWith(l, "LAB: up,")) {
      const size_t at = l.find("nodes: ");
      if (at != absl::string_view::npos) (void)absl::SimpleAtoi(l.substr(at + 7), &nodes);
    } else if (absl::StartsWith(l, "LAB-BEGIN ")) {
      guest = LabRun();
    } else if (absl::StartsWith(l, "LINUX: NUMABENCH ") && l.find(" MiB/s ") != l.npos) {
      double mib = 0;
      if (absl::SimpleAtod(l.substr(l.rfind(' ') + 1), &mib)) {
        guest.guest_mib_per_second = guest.guest_mib_per_second.value_or(0) + mib;
      }
    } else if (absl::StartsWith(l, "LINUX: GUEST-VMSTAT ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ', absl::SkipEmpty());
      uint64_t v = 0;
      if (f.size() == 4 && absl::SimpleAtoi(f[3], &v)) guest.guest_counters[std::string(f[2])] = v;
    } else if (absl::StartsWith(l, "LAB-JSON ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, absl::MaxSplits(' ', 3));
      if (f.size() < 4) continue;
      LabRun r;
      r.nodes = nodes;
      r.workload = std::string(f[1]);
      r.mode = std::string(f[2]);
      r.report = nlohmann::json::parse(f[3], nullptr, false);
      if (r.report.is_discarded() || !r.report.is_object()) continue;
      const nlohmann::json& report = r.report;
      r.access = Number(Member(Member(report, "balance"), "window_access_locality"));
      r.placement = Number(Member(report, "placement_locality"));
      // With a series, the last sample while every vCPU ran is the end.
      const nlohmann::json& series = Member(report, "placement_series");
      if (series.is_array()) {
        for (const auto& p : series) {
          if (!AllVcpusRunning(p)) break;
          if (std::optional<double> v = Number(Member(p, "placement_locality"))) r.placement = v;
        }
      }
      if (const nlohmann::json& e = Member(report, "exit_code"); e.is_number_integer()) {
        r.exit_code = e.get<int>();
      }
      if (absl::StartsWith(r.mode, "numavm")) {
        if (std::optional<double> c = Number(Member(Member(report, "sampling"), "cpu_seconds"))) {
          r.balancer_cpu_seconds = *c;
        }
      }
      const nlohmann::json& vcpu = Member(report, "vcpu");
      if (vcpu.is_array()) {
        for (const auto& v : vcpu) {
          const nlohmann::json& bytes = Member(v, "bytes");
          if (bytes.is_number_unsigned()) r.guest_bytes += bytes.get<uint64_t>();
        }
        r.vcpus = static_cast<int>(vcpu.size());
      }
      const nlohmann::json& sum = Member(Member(Member(report, "results"), "mismatches"), "sum");
      if (sum.is_number_unsigned()) r.mismatches = sum.get<uint64_t>();
      r.guest_mib_per_second = guest.guest_mib_per_second;
      r.guest_counters = std::move(guest.guest_counters);
      guest = LabRun();
      if (auto w = widened.find({r.workload, r.mode}); w != widened.end()) {
        r.widened = w->second;
        widened.erase(w);
      }
      std::erase_if(runs, [&](const LabRun& o) { return SameCase(o, r); });
      runs.push_back(std::move(r));
    } else if (absl::StartsWith(l, "LAB-WIDEN ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ');
      double seconds = 0;
      if (f.size() >= 4 && absl::SimpleAtod(f[3], &seconds)) {
        widened[{std::string(f[1]), std::string(f[2])}] = seconds;
      }
    } else if (absl::StartsWith(l, "LAB-VMSTAT ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ');
      if (f.size() < 3) continue;
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->workload == f[1] && it->mode == f[2]) {
          it->pages_migrated = Field(l, "pgmigrate_success");
          it->kernel_numa_migrated = Field(l, "numa_pages_migrated");
          for (size_t i = 3; i < f.size(); ++i) {
            std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(f[i], '=');
            uint64_t v = 0;
            if (!kv.second.empty() && absl::SimpleAtoi(kv.second, &v)) {
              it->counters[std::string(kv.first)] = v;
            }
          }
          break;
        }
      }
    } else if (absl::StartsWith(l, "LAB-KFAULTS ")) {
      // "LAB-KFAULTS WORKLOAD MODE LOCAL ALL": the kernel's recent NUMA
      // faults of the VM's threads, those on the thread's node and all.
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ', absl::SkipEmpty());
      uint64_t local = 0, all = 0;
      if (f.size() != 5 || !absl::SimpleAtoi(f[3], &local) || !absl::SimpleAtoi(f[4], &all) ||
          all == 0 || local > all) {
        continue;
      }
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->workload == f[1] && it->mode == f[2]) {
          it->kernel_faults = {local, all};
          if (!it->access) it->access = static_cast<double>(local) / static_cast<double>(all);
          break;
        }
      }
    } else if (absl::StartsWith(l, "LAB-FAIL ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ');
      if (f.size() < 3) continue;
      failures[{nodes, std::string(f[1]), std::string(f[2])}] += 1;
    }
  }
  for (auto& [key, n] : failures) {
    const auto& [fn, w, m] = key;
    bool found = false;
    for (LabRun& r : runs) {
      if (r.nodes == fn && r.workload == w && r.mode == m) {
        r.lab_failures = n;
        found = true;
      }
    }
    if (!found) {  // failed every time: a row that says so
      LabRun r;
      r.nodes = fn;
      r.workload = w;
      r.mode = m;
      r.lab_failures = n;
      runs.push_back(std::move(r));
    }
  }
  return runs;
}

double ConvergenceStart(const LabRun& run) {
  double start = run.widened.value_or(0);
  if (!run.report.is_object() || !run.report["phases"].is_array()) return start;
  for (const auto& p : run.report["phases"]) {
    if (p.value("name", std::string()) == "run") {
      start = std::max(start, p.value("seconds", 0.0));
      break;
    }
  }
  return start;
}

std::optional<Reached> PlacementReached(const LabRun& run, double target) {
  if (!run.report.is_object()) return std::nullopt;
  const nlohmann::json& series = run.report["placement_series"];
  if (!series.is_array()) return std::nullopt;
  const double start = ConvergenceStart(run);
  uint64_t bytes_at_start = 0;
  std::optional<Reached> held;
  for (const auto& p : series) {
    if (!AllVcpusRunning(p)) break;
    const double t = p.value("seconds", 0.0);
    const uint64_t bytes = p.value("guest_bytes", uint64_t{0});
    if (t <= start) {
      bytes_at_start = bytes;
      continue;
    }
    std::optional<double> v = Number(p["placement_locality"]);
    if (!v || *v < target) {
      held.reset();
    } else if (!held) {
      held = Reached{t - start, bytes > bytes_at_start ? bytes - bytes_at_start : 0};
    }
  }
  return held;
}

std::optional<uint64_t> BytesBeforeLocality(const LabRun& run, double target) {
  const nlohmann::json& series = run.report["balance"]["locality_series"];
  std::optional<double> when;
  for (const auto& p : series) {
    if (p.value("locality", 0.0) >= target) {
      when = p.value("seconds", 0.0);
      break;
    }
  }
  if (!when) return std::nullopt;
  uint64_t bytes = 0;
  for (const auto& v : run.report["vcpu"]) {
    uint64_t last = 0;
    for (const auto& p : v["progress"]) {
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
      "off",         "off-anon",   "hard",         "inverse",         "numavm",
      "numavm-anon", "numavm-thp", "numavm-extra", "numavm-window",   "kernel",
      "kernel-thp",  "numad",      "churn",        "churn-protected", "churn-unmapped"};
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
    if (r.report.is_object() && r.report["vcpu"].is_array()) {
      for (const auto& v : r.report["vcpu"]) s += v.value("throughput_bytes_per_second", 0.0);
    }
    return s;
  };
  for (const LabRun& r : runs) {
    if (r.mode == "hard" && r.placement) hard[{r.nodes, r.workload}] = *r.placement;
    if (r.mode == "hard" && speed(r) > 0) hard_speed[{r.nodes, r.workload}] = speed(r);
  }
  std::string out =
      absl::StrFormat("%-5s %-12s %-13s %7s %7s %11s %11s %9s %11s %11s %7s %7s %6s %s\n", "nodes",
                      "workload", "mode", "placed", "access", "s to 90%", "GiB to 90%", "migrated",
                      "pte updates", "hint faults", "cpu s", "speed", "lab x", "notes");
  for (const LabRun& r : runs) {
    auto pct = [](std::optional<double> v) {
      return v ? absl::StrFormat("%.1f%%", 100 * *v) : std::string("-");
    };
    std::string secs = "-", gib = "-";
    auto it = hard.find({r.nodes, r.workload});
    if (it != hard.end() && r.report.is_object()) {
      std::optional<Reached> at = PlacementReached(r, 0.9 * it->second);
      secs = at ? absl::StrFormat("%.0f", at->seconds) : "never";
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
      notes += absl::StrCat(
          "numavm moved ", r.report["balance"].value("pages_migrated", uint64_t{0}),
          ", re-migrated ", r.report["balance"].value("remigrations", uint64_t{0}), " ");
      const nlohmann::json& sm = r.report["sampling"];
      if (sm.is_object() && sm.value("scan", std::string()) == "regions" &&
          sm.value("sampler", std::string("off")) != "off") {
        // What the scan could afford here: its budget and what a probe cost.
        notes += absl::StrFormat(
            "(budget %.0f%%, %.0f us/probe host, %.0f us/fault, scan %.1f MiB/s) ",
            100 * sm.value("stall_budget", 0.0), 1e6 * sm.value("host_seconds_per_probe", 0.0),
            1e6 * sm.value("fault_cost_seconds", 0.0),
            sm.value("rate_bytes_per_second", 0.0) / (1 << 20));
        // Where the sampling thread's CPU went (reports since 2026-12-02).
        const nlohmann::json& split = Member(sm, "host_cpu_seconds");
        if (split.is_object()) {
          notes += absl::StrFormat("(sampler CPU: arm %.1f s, collect %.1f s, decide %.1f s",
                                   split.value("arm", 0.0), split.value("collect", 0.0),
                                   split.value("decide", 0.0));
          const uint64_t run = sm.value("probe_run_pages", uint64_t{1});
          notes += run > 1 ? absl::StrFormat("; probes in runs of %u) ", run) : ") ";
        }
      }
      // What a page move cost in wall time, and where (reports since
      // 2026-12-02, evening).
      const nlohmann::json& mt = Member(r.report["balance"], "move_seconds");
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
      auto count = [](const nlohmann::json& j, const char* k) {
        const nlohmann::json& v = Member(j, k);
        return v.is_number_unsigned() ? v.get<uint64_t>() : uint64_t{0};
      };
      notes += absl::StrFormat(
          "numavm moved %u, access %s (%u samples, %u unattributed, %u to a blocked vCPU, %u "
          "by cell); ",
          count(b, "pages_migrated"),
          access ? absl::StrFormat("%.1f%%", 100 * *access) : std::string("-"),
          count(sm, "samples"), count(sm, "unattributed"), count(sm, "inferred_vcpu"),
          count(sm, "cell_vcpu"));
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
            "%-5d %-12s %-13s %7s %7s %11s %11s %9u %11s %11s %7s %7s %6d %s\n", r.nodes,
            r.workload, UpperMode(r.mode), pct(r.placement), pct(r.access), secs, gib,
            r.pages_migrated, counter("numa_pte_updates"), hints,
            r.balancer_cpu_seconds >= 0 ? absl::StrFormat("%.2f", r.balancer_cpu_seconds) : "-",
            rel, r.lab_failures, notes));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> LabPlots(const std::vector<LabRun>& all) {
  std::map<std::pair<int, std::string>, PlotSpec> plots;
  for (const LabRun& r : all) {
    if (!r.report.is_object() || !r.report["placement_series"].is_array()) continue;
    PlotSpec& spec = plots[{r.nodes, r.workload}];
    spec.title =
        absl::StrFormat("%s on %d nodes: declared memory on its vCPUs' nodes", r.workload, r.nodes);
    spec.y_label = "placement locality";
    spec.x_label = "seconds since the first touch ended";
    PlotSeries s{UpperMode(r.mode), {}, r.mode == "hard"};
    const double start = ConvergenceStart(r);
    for (const auto& p : r.report["placement_series"]) {
      if (!AllVcpusRunning(p)) break;
      std::optional<double> v = Number(p["placement_locality"]);
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
