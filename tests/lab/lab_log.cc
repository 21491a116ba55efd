#include "tests/lab/lab_log.h"

#include <map>
#include <sstream>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/lab/report_json.h"

namespace numavm::lab {
namespace {

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

// The latest run of this workload and mode so far (lines about a run
// follow its LAB-JSON), or null.
LabRun* LatestRun(std::vector<LabRun>& runs, absl::string_view workload, absl::string_view mode) {
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (it->workload == workload && it->mode == mode) return &*it;
  }
  return nullptr;
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
      LabRun* run = LatestRun(runs, f[1], f[2]);
      if (run == nullptr) continue;
      run->pages_migrated = Field(l, "pgmigrate_success");
      run->kernel_numa_migrated = Field(l, "numa_pages_migrated");
      for (size_t i = 3; i < f.size(); ++i) {
        std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(f[i], '=');
        uint64_t v = 0;
        if (!kv.second.empty() && absl::SimpleAtoi(kv.second, &v)) {
          run->counters[std::string(kv.first)] = v;
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
      LabRun* run = LatestRun(runs, f[1], f[2]);
      if (run == nullptr) continue;
      run->kernel_faults = {local, all};
      if (!run->access) run->access = static_cast<double>(local) / static_cast<double>(all);
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

}  // namespace numavm::lab
