#include "cli/run_config_file.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/size.h"
#include "base/toml.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

absl::Status Bad(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

// Rejects keys outside `allowed`, so a typo is an error, not a silent default.
absl::Status CheckKeys(const toml::table& table, const std::set<std::string>& allowed,
                       absl::string_view where, absl::string_view source) {
  return CheckTomlKeys(table, allowed, where, source);
}

absl::StatusOr<std::string> SizeString(const toml::node& node, absl::string_view key,
                                       absl::string_view source) {
  if (auto s = node.value<std::string>()) return *s;
  // Only an integer node: value<int64_t>() would also convert a float, and a
  // float beyond int64's range makes that conversion undefined (the fuzzer
  // found `memory = 1e300`).
  if (const toml::value<int64_t>* i = node.as_integer(); i != nullptr && **i >= 0)
    return absl::StrCat(**i);
  return Bad(source, absl::StrCat(key, " must be a size such as \"512M\""));
}

absl::Status ApplyVm(const toml::table& vm, absl::string_view source, RunOptions& options) {
  if (absl::Status s =
          CheckKeys(vm, {"vcpus", "memory", "backing", "duration", "timeout"}, "[vm]", source);
      !s.ok()) {
    return s;
  }
  if (vm.get("duration") != nullptr && vm.get("timeout") != nullptr) {
    return Bad(source, "vm.duration and vm.timeout (its old name) are both set; keep duration");
  }
  absl::StatusOr<std::optional<int64_t>> vcpus =
      TomlInt(vm, "vcpus", 1, abi::kMaxVcpus, "vm.vcpus", source);
  if (!vcpus.ok()) return vcpus.status();
  if (*vcpus) options.vm.vcpus = static_cast<int>(**vcpus);
  if (const toml::node* n = vm.get("memory")) {
    absl::StatusOr<std::string> text = SizeString(*n, "vm.memory", source);
    if (!text.ok()) return text.status();
    absl::StatusOr<uint64_t> bytes = ParseSize(*text);
    if (!bytes.ok()) return Bad(source, absl::StrCat("vm.memory: ", bytes.status().message()));
    options.vm.memory_bytes = *bytes;
  }
  absl::StatusOr<std::optional<std::string>> backing =
      TomlString(vm, "backing", "vm.backing", source);
  if (!backing.ok()) return backing.status();
  if (*backing) {
    absl::StatusOr<Backing> b = ParseBacking(**backing);
    if (!b.ok()) return TomlError(*vm.get("backing"), b.status().message(), source);
    options.vm.backing = *b;
  }
  for (const char* key : {"duration", "timeout"}) {
    const toml::node* n = vm.get(key);
    if (n == nullptr) continue;
    std::string text;
    if (n->is_string())
      text = **n->as_string();
    else if (n->is_integer())
      text = absl::StrCat(**n->as_integer());
    else
      return TomlError(*n, absl::StrCat("vm.", key, " must be a duration such as \"30s\""), source);
    absl::StatusOr<absl::Duration> t = ParseTimeout(text);
    if (!t.ok()) return TomlError(*n, absl::StrCat("vm.", key, ": ", t.status().message()), source);
    options.vm.timeout = *t;
  }
  return absl::OkStatus();
}

absl::Status ApplyCells(const toml::array& cells, absl::string_view source, RunOptions& options) {
  options.vm.cells.clear();
  for (size_t i = 0; i < cells.size(); ++i) {
    const toml::table* cell = cells[i].as_table();
    std::string where = absl::StrCat("[[cell]] #", i + 1);
    if (cell == nullptr) return Bad(source, absl::StrCat(where, " must be a table"));
    if (absl::Status s = CheckKeys(*cell, {"memory", "vcpus"}, where, source); !s.ok()) {
      return s;
    }
    CellConfig c;
    const toml::node* mem = cell->get("memory");
    if (mem == nullptr) return Bad(source, absl::StrCat(where, " needs memory"));
    absl::StatusOr<std::string> text = SizeString(*mem, "cell.memory", source);
    if (!text.ok()) return text.status();
    absl::StatusOr<uint64_t> bytes = ParseSize(*text);
    if (!bytes.ok()) return Bad(source, absl::StrCat(where, ": ", bytes.status().message()));
    c.memory_bytes = *bytes;
    const toml::array* vcpus = cell->get_as<toml::array>("vcpus");
    if (vcpus == nullptr) return Bad(source, absl::StrCat(where, " needs vcpus = [..]"));
    for (const toml::node& v : *vcpus) {
      if (!v.is_integer() || **v.as_integer() < 0 || **v.as_integer() >= abi::kMaxVcpus) {
        return TomlError(v, absl::StrCat(where, ": vcpus must be integers 0-", abi::kMaxVcpus - 1),
                         source);
      }
      c.vcpus.push_back(static_cast<int>(**v.as_integer()));
    }
    options.vm.cells.push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::Status ApplySampling(const toml::table& t, absl::string_view source, RunOptions& options) {
  if (absl::Status s = CheckKeys(t,
                                 {"sampler", "window", "period", "period_max", "ring_entries",
                                  "stall_budget", "rate_min", "rate_max", "probes"},
                                 "[sampling]", source);
      !s.ok()) {
    return s;
  }
  if (const toml::node* n = t.get("sampler")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.sampler must be a string");
    if (absl::Status s = SetSampler(*v, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("window")) {
    absl::StatusOr<std::string> text = SizeString(*n, "sampling.window", source);
    if (!text.ok()) return text.status();
    if (absl::Status s = SetScanWindow(*text, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("period")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.period must be a duration string such as \"1s\"");
    if (absl::Status s = SetScanPeriod(*v, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("period_max")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.period_max must be a duration string such as \"16s\"");
    if (absl::Status s = SetScanPeriodMax(*v, options); !s.ok()) return Bad(source, s.message());
  }
  struct {
    const char* key;
    absl::Status (*set)(absl::string_view, RunOptions&);
  } const rate_keys[] = {{"stall_budget", SetScanStallBudget},
                         {"rate_min", SetScanRateMin},
                         {"rate_max", SetScanRateMax}};
  for (const auto& k : rate_keys) {
    const toml::node* n = t.get(k.key);
    if (n == nullptr) continue;
    auto v = n->value<std::string>();
    if (!v) return Bad(source, absl::StrCat("sampling.", k.key, " must be a string"));
    if (absl::Status s = k.set(*v, options); !s.ok()) return Bad(source, s.message());
  }
  absl::StatusOr<std::optional<int64_t>> probes =
      TomlInt(t, "probes", 0, INT32_MAX, "sampling.probes", source);
  if (!probes.ok()) return probes.status();
  if (*probes) {
    if (absl::Status s = SetScanProbes(**probes, options); !s.ok()) {
      return TomlError(*t.get("probes"), s.message(), source);
    }
  }
  absl::StatusOr<std::optional<int64_t>> ring =
      TomlInt(t, "ring_entries", 1, INT32_MAX, "sampling.ring_entries", source);
  if (!ring.ok()) return ring.status();
  if (*ring) options.sampling.ring_entries = static_cast<uint32_t>(**ring);
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyRunConfig(absl::string_view text, absl::string_view source, RunOptions& options) {
  absl::StatusOr<toml::table> parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  if (absl::Status s = CheckKeys(root, {"vm", "payload", "placement", "report", "cell", "sampling"},
                                 "the top level", source);
      !s.ok()) {
    return s;
  }
  if (const toml::table* vm = root.get_as<toml::table>("vm")) {
    if (absl::Status s = ApplyVm(*vm, source, options); !s.ok()) return s;
  } else if (root.contains("vm")) {
    return Bad(source, "vm must be a table");
  }
  if (const toml::table* payload = root.get_as<toml::table>("payload")) {
    if (absl::Status s = CheckKeys(*payload, {"name", "args"}, "[payload]", source); !s.ok())
      return s;
    absl::StatusOr<std::optional<std::string>> name =
        TomlString(*payload, "name", "payload.name", source);
    if (!name.ok()) return name.status();
    if (*name) options.payload = **name;
    absl::StatusOr<std::optional<std::string>> args =
        TomlString(*payload, "args", "payload.args", source);
    if (!args.ok()) return args.status();
    if (*args) options.vm.payload_args = **args;
  } else if (root.contains("payload")) {
    return TomlError(*root.get("payload"), "payload must be a table ([payload])", source);
  }
  if (const toml::table* placement = root.get_as<toml::table>("placement")) {
    if (absl::Status s = CheckKeys(*placement, {"mode"}, "[placement]", source); !s.ok()) return s;
    absl::StatusOr<std::optional<std::string>> mode =
        TomlString(*placement, "mode", "placement.mode", source);
    if (!mode.ok()) return mode.status();
    if (*mode) {
      absl::StatusOr<StaticPlacement> p = ParseStaticPlacement(**mode);
      if (!p.ok()) return TomlError(*placement->get("mode"), p.status().message(), source);
      options.placement = *p;
    }
  } else if (root.contains("placement")) {
    return TomlError(*root.get("placement"), "placement must be a table ([placement])", source);
  }
  if (const toml::table* report = root.get_as<toml::table>("report")) {
    if (absl::Status s = CheckKeys(*report, {"format"}, "[report]", source); !s.ok()) return s;
    absl::StatusOr<std::optional<std::string>> format =
        TomlString(*report, "format", "report.format", source);
    if (!format.ok()) return format.status();
    if (*format) {
      absl::StatusOr<ReportFormat> parsed_format = ParseReportFormat(**format);
      if (!parsed_format.ok()) {
        return TomlError(*report->get("format"),
                         absl::StrCat("report.format: ", parsed_format.status().message()), source);
      }
      options.report = *parsed_format;
    }
  } else if (root.contains("report")) {
    return TomlError(*root.get("report"), "report must be a table ([report])", source);
  }
  if (const toml::table* sampling = root.get_as<toml::table>("sampling")) {
    if (absl::Status s = ApplySampling(*sampling, source, options); !s.ok()) return s;
  } else if (root.contains("sampling")) {
    return TomlError(*root.get("sampling"), "sampling must be a table ([sampling])", source);
  }
  if (root.contains("cell")) {
    const toml::array* cells = root.get_as<toml::array>("cell");
    if (cells == nullptr) return Bad(source, "cell must be an array of tables ([[cell]])");
    if (absl::Status s = ApplyCells(*cells, source, options); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace numavm
