#include "tests/lab/lab_results.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "base/size.h"

namespace numavm::lab {
namespace {

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

}  // namespace

std::vector<LabRun> ParseLabLog(const std::string& text) {
  std::vector<LabRun> runs;
  int nodes = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    absl::string_view l = absl::StripTrailingAsciiWhitespace(line);
    if (absl::StartsWith(l, "LAB: up,")) {
      const size_t at = l.find("nodes: ");
      if (at != absl::string_view::npos) (void)absl::SimpleAtoi(l.substr(at + 7), &nodes);
    } else if (absl::StartsWith(l, "LAB-JSON ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, absl::MaxSplits(' ', 3));
      if (f.size() < 4) continue;
      LabRun r;
      r.nodes = nodes;
      r.workload = std::string(f[1]);
      r.mode = std::string(f[2]);
      r.report = nlohmann::json::parse(f[3], nullptr, false);
      if (r.report.is_discarded() || !r.report.is_object()) continue;
      const nlohmann::json& b = r.report["balance"];
      r.access = Number(b["window_access_locality"]);
      r.placement = Number(r.report["placement_locality"]);
      r.exit_code = r.report.value("exit_code", -1);
      if (r.mode == "numavm") r.balancer_cpu_seconds = r.report["sampling"].value("cpu_seconds", -1.0);
      for (const auto& v : r.report["vcpu"]) r.guest_bytes += v.value("bytes", uint64_t{0});
      r.vcpus = static_cast<int>(r.report["vcpu"].size());
      const nlohmann::json& results = r.report["results"];
      if (results.is_object() && results.contains("mismatches")) {
        const nlohmann::json& m = results["mismatches"];
        if (m.is_object() && m.contains("sum") && m["sum"].is_number_unsigned()) {
          r.mismatches = m["sum"].get<uint64_t>();
        }
      }
      std::erase_if(runs, [&](const LabRun& o) { return SameCase(o, r); });
      runs.push_back(std::move(r));
    } else if (absl::StartsWith(l, "LAB-VMSTAT ")) {
      std::vector<absl::string_view> f = absl::StrSplit(l, ' ');
      if (f.size() < 3) continue;
      for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
        if (it->workload == f[1] && it->mode == f[2]) {
          it->pages_migrated = Field(l, "pgmigrate_success");
          it->kernel_numa_migrated = Field(l, "numa_pages_migrated");
          break;
        }
      }
    }
  }
  return runs;
}

std::optional<uint64_t> BytesBeforeLocality(const LabRun& run, double target) {
  const nlohmann::json& series = run.report["balance"]["locality_series"];
  std::optional<double> when;
  for (const auto& p : series) {
    if (p.size() == 2 && p[1].get<double>() >= target) {
      when = p[0].get<double>();
      break;
    }
  }
  if (!when) return std::nullopt;
  uint64_t bytes = 0;
  for (const auto& v : run.report["vcpu"]) {
    uint64_t last = 0;
    for (const auto& p : v["progress"]) {
      if (p[0].get<double>() > *when) break;
      last = p[1].get<uint64_t>();
    }
    bytes += last;
  }
  return bytes;
}

std::string LabTable(const std::vector<LabRun>& all) {
  // One row per case, the last run of it (a re-run replaces an earlier
  // one), ordered by nodes, workload as first seen, and mode.
  static const std::vector<std::string> kModes = {"off", "hard", "inverse", "numavm",
                                                  "kernel", "numad", "churn"};
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
  std::map<std::pair<int, std::string>, double> hard;
  for (const LabRun& r : runs) {
    if (r.mode == "hard" && r.access) hard[{r.nodes, r.workload}] = *r.access;
  }
  std::string out = absl::StrFormat("%-5s %-12s %-8s %8s %8s %9s %12s %9s %10s %s\n", "nodes",
                                    "workload", "mode", "access", "placed", "migrated",
                                    "to 90% HARD", "cpu s", "vs HARD", "notes");
  for (const LabRun& r : runs) {
    auto pct = [](std::optional<double> v) {
      return v ? absl::StrFormat("%.1f%%", 100 * *v) : std::string("-");
    };
    std::string to90 = "-", versus = "-";
    auto it = hard.find({r.nodes, r.workload});
    if (it != hard.end() && r.access) {
      std::optional<uint64_t> b = BytesBeforeLocality(r, 0.9 * it->second);
      to90 = b ? FormatSize(*b) : "never";
      versus = it->second > 0 ? absl::StrFormat("%.2f x", *r.access / it->second) : "-";
    }
    std::string notes;
    if (r.exit_code != 0) notes += absl::StrCat("exit ", r.exit_code, " ");
    if (r.mode == "kernel") notes += absl::StrCat("numa_pages_migrated ", r.kernel_numa_migrated, " ");
    if (r.mode == "numavm") {
      notes += absl::StrCat("re-migrated ", r.report["balance"].value("remigrations", uint64_t{0}),
                            " of ", r.report["balance"].value("pages_migrated", uint64_t{0}), " ");
    }
    if (r.workload == "verify") {
      notes += absl::StrCat(
          "mismatches ", r.mismatches ? absl::StrCat(*r.mismatches) : std::string("not reported"),
          ", ", r.vcpus, " vCPUs, ", absl::StrFormat("%.0f", r.report.value("elapsed_seconds", 0.0)),
          " s ");
    }
    absl::StrAppend(&out, absl::StrFormat(
        "%-5d %-12s %-8s %8s %8s %9u %12s %9s %10s %s\n", r.nodes, r.workload, UpperMode(r.mode),
        pct(r.access), pct(r.placement), r.pages_migrated, to90,
        r.balancer_cpu_seconds >= 0 ? absl::StrFormat("%.2f", r.balancer_cpu_seconds) : "-", versus,
        notes));
  }
  return out;
}

}  // namespace numavm::lab
