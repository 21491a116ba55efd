#include "balancer/report/vm_report.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/size.h"

namespace numavm {
namespace {

// Label values escape backslash, double quote and newline.
std::string Label(const std::string& v) {
  return absl::StrReplaceAll(v, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}});
}

std::string Labels(const VmReport& r) {
  return absl::StrCat("domain=\"", Label(r.name), "\",uuid=\"", Label(r.uuid), "\",kind=\"",
                      Label(r.kind), "\"");
}

template <typename Map>
nlohmann::json NodeMap(const Map& m) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [node, v] : m) j[std::to_string(node)] = v;
  return j;
}

// `v` as an integer of type T: false for anything else (a float, a string,
// a value out of T's range), never a cast that overflows.
template <typename T>
bool IntegerIn(const nlohmann::json& v, T* out) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
    *out = static_cast<T>(u);
    return true;
  }
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    if (i < 0 && !std::numeric_limits<T>::is_signed) return false;
    if (std::numeric_limits<T>::is_signed &&
        (i < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
         i > static_cast<int64_t>(std::numeric_limits<T>::max()))) {
      return false;
    }
    *out = static_cast<T>(i);
    return true;
  }
  return false;
}

// j[key] as an integer of type T; `fallback` when absent; an error when
// present but not such an integer.
template <typename T>
absl::StatusOr<T> IntegerField(const nlohmann::json& j, const char* key,
                               std::optional<T> fallback) {
  if (!j.contains(key)) {
    if (fallback) return *fallback;
    return absl::InvalidArgumentError(absl::StrCat("bad VM report: no \"", key, "\""));
  }
  T v{};
  if (!IntegerIn(j[key], &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad VM report: \"", key, "\" is not an integer in range"));
  }
  return v;
}

template <typename T>
absl::StatusOr<std::map<int, T>> NodeMapFrom(const nlohmann::json& j) {
  std::map<int, T> out;
  if (!j.is_object()) return absl::InvalidArgumentError("node map is not an object");
  for (const auto& [key, value] : j.items()) {
    int node = 0;
    try {
      node = std::stoi(key);
    } catch (...) {
      return absl::InvalidArgumentError(absl::StrCat("bad node '", key, "'"));
    }
    T v{};
    if (!IntegerIn(value, &v)) return absl::InvalidArgumentError("node value is not an integer");
    out[node] = v;
  }
  return out;
}

}  // namespace

double PlacementLocality(const std::map<int, int>& vcpus_per_node,
                         const std::map<int, uint64_t>& memory_per_node) {
  double vcpus = 0, memory = 0;
  for (const auto& [n, v] : vcpus_per_node) vcpus += v;
  for (const auto& [n, b] : memory_per_node) memory += static_cast<double>(b);
  if (vcpus == 0 || memory == 0) return 0;
  double local = 0;
  for (const auto& [n, v] : vcpus_per_node) {
    auto it = memory_per_node.find(n);
    if (it != memory_per_node.end())
      local += (v / vcpus) * (static_cast<double>(it->second) / memory);
  }
  return local;
}

nlohmann::json ToJson(const VmReport& r) {
  return {{"name", r.name},
          {"uuid", r.uuid},
          {"kind", r.kind},
          {"manager", r.manager},
          {"mode", r.mode},
          {"pid", r.pid},
          {"vcpus", r.vcpus},
          {"memory_bytes", r.memory_bytes},
          {"memory_per_node", NodeMap(r.memory_per_node)},
          {"vcpus_per_node", NodeMap(r.vcpus_per_node)},
          {"home_nodes", r.home_nodes},
          {"placement_locality", r.placement_locality},
          {"access_locality",
           r.access_locality ? nlohmann::json(*r.access_locality) : nlohmann::json(nullptr)},
          {"access_source",
           r.access_source.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.access_source)},
          {"pages_migrated", r.pages_migrated},
          {"bytes_migrated", r.bytes_migrated},
          {"migration_failures", r.migration_failures},
          {"vcpu_moves", r.vcpu_moves},
          {"balancer_cpu_seconds", r.balancer_cpu_seconds},
          {"status", r.status}};
}

absl::StatusOr<VmReport> VmReportFromJson(const nlohmann::json& j) {
  if (!j.is_object()) return absl::InvalidArgumentError("a VM report is a JSON object");
  VmReport r;
  try {
    r.name = j.at("name").get<std::string>();
    r.kind = j.at("kind").get<std::string>();
    r.manager = j.value("manager", std::string());
    if (j.contains("uuid") && j["uuid"].is_string()) r.uuid = j["uuid"].get<std::string>();
    r.mode = j.value("mode", std::string());
    absl::StatusOr<int> pid = IntegerField<int>(j, "pid", 0);
    if (!pid.ok()) return pid.status();
    r.pid = *pid;
    absl::StatusOr<int> vcpus = IntegerField<int>(j, "vcpus", std::nullopt);
    if (!vcpus.ok()) return vcpus.status();
    r.vcpus = *vcpus;
    absl::StatusOr<uint64_t> memory = IntegerField<uint64_t>(j, "memory_bytes", std::nullopt);
    if (!memory.ok()) return memory.status();
    r.memory_bytes = *memory;
    auto mem = NodeMapFrom<uint64_t>(j.at("memory_per_node"));
    if (!mem.ok()) return mem.status();
    r.memory_per_node = *mem;
    auto vc = NodeMapFrom<int>(j.at("vcpus_per_node"));
    if (!vc.ok()) return vc.status();
    r.vcpus_per_node = *vc;
    if (j.contains("home_nodes")) {
      if (!j["home_nodes"].is_array())
        return absl::InvalidArgumentError("bad VM report: home_nodes");
      for (const nlohmann::json& n : j["home_nodes"]) {
        int node = 0;
        if (!IntegerIn(n, &node)) return absl::InvalidArgumentError("bad VM report: home_nodes");
        r.home_nodes.push_back(node);
      }
    }
    r.placement_locality = j.value("placement_locality", 0.0);
    if (j.contains("access_locality") && j["access_locality"].is_number()) {
      r.access_locality = j["access_locality"].get<double>();
    }
    if (j.contains("access_source") && j["access_source"].is_string()) {
      r.access_source = j["access_source"].get<std::string>();
    }
    for (auto [key, field] : {std::pair{"pages_migrated", &r.pages_migrated},
                              std::pair{"bytes_migrated", &r.bytes_migrated},
                              std::pair{"migration_failures", &r.migration_failures},
                              std::pair{"vcpu_moves", &r.vcpu_moves}}) {
      absl::StatusOr<uint64_t> v = IntegerField<uint64_t>(j, key, uint64_t{0});
      if (!v.ok()) return v.status();
      *field = *v;
    }
    r.balancer_cpu_seconds = j.value("balancer_cpu_seconds", 0.0);
    r.status = j.value("status", std::string());
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("bad VM report: ", e.what()));
  }
  return r;
}

std::string ReportsToTable(const std::vector<VmReport>& reports) {
  // Columns as wide as their longest entry: a long domain name or many
  // nodes shift the columns, never run into the next one.
  std::vector<std::string> mems, vcs;
  int name_w = 2, mem_w = 11, vc_w = 10;
  for (const VmReport& r : reports) {
    std::vector<std::string> mem, vc;
    for (const auto& [n, b] : r.memory_per_node) mem.push_back(absl::StrCat(n, ":", FormatSize(b)));
    for (const auto& [n, v] : r.vcpus_per_node) vc.push_back(absl::StrCat(n, ":", v));
    mems.push_back(absl::StrJoin(mem, " "));
    vcs.push_back(absl::StrJoin(vc, " "));
    name_w = std::max(name_w, static_cast<int>(r.name.size()));
    mem_w = std::max(mem_w, static_cast<int>(mems.back().size()));
    vc_w = std::max(vc_w, static_cast<int>(vcs.back().size()));
  }
  std::string out =
      absl::StrFormat("%-*s %-10s %-14s %5s %10s %-*s %-*s %8s %8s %9s %7s %8s\n", name_w, "VM",
                      "kind", "managed by", "vCPUs", "memory", mem_w, "memory/node", vc_w,
                      "vCPUs/node", "place", "access", "migrated", "vmoves", "cpu s");
  for (size_t i = 0; i < reports.size(); ++i) {
    const VmReport& r = reports[i];
    absl::StrAppend(
        &out, absl::StrFormat(
                  "%-*s %-10s %-14s %5d %10s %-*s %-*s %7.1f%% %8s %9s %7u %8.3f\n", name_w, r.name,
                  r.kind, r.manager, r.vcpus, FormatSize(r.memory_bytes), mem_w, mems[i], vc_w,
                  vcs[i], 100 * r.placement_locality,
                  r.access_locality ? absl::StrFormat("%.1f%%", 100 * *r.access_locality) : "-",
                  FormatSize(r.bytes_migrated), r.vcpu_moves, r.balancer_cpu_seconds));
    if (!r.status.empty()) absl::StrAppend(&out, "  ", r.name, ": ", r.status, "\n");
  }
  return out;
}

std::string ReportsToPrometheus(const std::vector<VmReport>& reports) {
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, auto value_of) {
    absl::StrAppend(&out, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
    for (const VmReport& r : reports) value_of(r, name);
  };
  auto plain = [&](auto get) {
    return [&, get](const VmReport& r, const char* name) {
      absl::StrAppend(&out, name, "{", Labels(r), "} ", get(r), "\n");
    };
  };
  family("numavm_vm_info", "gauge",
         "1 per VM; who balances it, in which mode, and its home nodes (libvirt domains).",
         [&](const VmReport& r, const char* name) {
           absl::StrAppend(&out, name, "{", Labels(r), ",manager=\"", Label(r.manager),
                           "\",mode=\"", Label(r.mode), "\",home_nodes=\"",
                           absl::StrJoin(r.home_nodes, ","), "\"} 1\n");
         });
  family("numavm_vm_vcpus", "gauge", "vCPUs of the VM.",
         plain([](const VmReport& r) { return r.vcpus; }));
  family("numavm_vm_memory_bytes", "gauge", "Guest memory size.",
         plain([](const VmReport& r) { return r.memory_bytes; }));
  family("numavm_vm_node_memory_bytes", "gauge", "Guest memory resident on each host node.",
         [&](const VmReport& r, const char* name) {
           for (const auto& [n, b] : r.memory_per_node) {
             absl::StrAppend(&out, name, "{", Labels(r), ",node=\"", n, "\"} ", b, "\n");
           }
         });
  family("numavm_vm_node_vcpus", "gauge", "vCPUs that last ran on each host node.",
         [&](const VmReport& r, const char* name) {
           for (const auto& [n, v] : r.vcpus_per_node) {
             absl::StrAppend(&out, name, "{", Labels(r), ",node=\"", n, "\"} ", v, "\n");
           }
         });
  family("numavm_vm_placement_locality_ratio", "gauge",
         "Share of accesses local if every vCPU used all memory alike (0-1).",
         plain([](const VmReport& r) { return absl::StrFormat("%.6f", r.placement_locality); }));
  family("numavm_vm_access_locality_ratio", "gauge",
         "Share of local accesses (0-1), sampled by numavm's VMM or from the host "
         "kernel's NUMA fault counts of a domain's vCPU threads.",
         [&](const VmReport& r, const char* name) {
           if (r.access_locality) {
             absl::StrAppend(&out, name, "{", Labels(r), "} ",
                             absl::StrFormat("%.6f", *r.access_locality), "\n");
           }
         });
  family("numavm_vm_pages_migrated_total", "counter", "Guest pages migrated between nodes.",
         plain([](const VmReport& r) { return r.pages_migrated; }));
  family("numavm_vm_bytes_migrated_total", "counter", "Guest bytes migrated between nodes.",
         plain([](const VmReport& r) { return r.bytes_migrated; }));
  family("numavm_vm_migration_failures_total", "counter", "Page migrations that failed.",
         plain([](const VmReport& r) { return r.migration_failures; }));
  family("numavm_vm_vcpu_moves_total", "counter", "vCPUs given a new node.",
         plain([](const VmReport& r) { return r.vcpu_moves; }));
  family("numavm_vm_balancer_cpu_seconds_total", "counter", "CPU time numavm spent on the VM.",
         plain([](const VmReport& r) { return absl::StrFormat("%.6f", r.balancer_cpu_seconds); }));
  return out;
}

}  // namespace numavm
