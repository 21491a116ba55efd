#include "cli/run_options.h"

#include <fstream>
#include <set>
#include <sstream>


#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "balancer/topology/topology.h"
#include "base/size.h"
#include "base/toml.h"

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

absl::StatusOr<std::string> SizeString(const toml::node& node,
                                       absl::string_view key,
                                       absl::string_view source) {
  if (auto s = node.value<std::string>()) return *s;
  if (auto i = node.value<int64_t>(); i && *i >= 0) return absl::StrCat(*i);
  return Bad(source, absl::StrCat(key, " must be a size such as \"512M\""));
}

absl::Status ApplyVm(const toml::table& vm, absl::string_view source,
                     RunOptions& options) {
  if (absl::Status s = CheckKeys(vm, {"vcpus", "memory", "backing", "timeout"},
                                 "[vm]", source);
      !s.ok()) {
    return s;
  }
  if (const toml::node* n = vm.get("vcpus")) {
    auto v = n->value<int64_t>();
    if (!v) return Bad(source, "vm.vcpus must be an integer");
    options.vm.vcpus = static_cast<int>(*v);
  }
  if (const toml::node* n = vm.get("memory")) {
    absl::StatusOr<std::string> text = SizeString(*n, "vm.memory", source);
    if (!text.ok()) return text.status();
    absl::StatusOr<uint64_t> bytes = ParseSize(*text);
    if (!bytes.ok()) return Bad(source, absl::StrCat("vm.memory: ", bytes.status().message()));
    options.vm.memory_bytes = *bytes;
  }
  if (const toml::node* n = vm.get("backing")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "vm.backing must be a string");
    absl::StatusOr<Backing> b = ParseBacking(*v);
    if (!b.ok()) return Bad(source, b.status().message());
    options.vm.backing = *b;
  }
  if (const toml::node* n = vm.get("timeout")) {
    std::string text;
    if (auto s = n->value<std::string>()) text = *s;
    else if (auto i = n->value<int64_t>()) text = absl::StrCat(*i);
    absl::StatusOr<absl::Duration> t = ParseTimeout(text);
    if (!t.ok()) return Bad(source, absl::StrCat("vm.timeout: ", t.status().message()));
    options.vm.timeout = *t;
  }
  return absl::OkStatus();
}

absl::Status ApplyCells(const toml::array& cells, absl::string_view source,
                        RunOptions& options) {
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
      auto index = v.value<int64_t>();
      if (!index) return Bad(source, absl::StrCat(where, ": vcpus must be integers"));
      c.vcpus.push_back(static_cast<int>(*index));
    }
    options.vm.cells.push_back(std::move(c));
  }
  return absl::OkStatus();
}

absl::Status ApplySampler(absl::string_view sampler, RunOptions& options) {
  absl::StatusOr<SamplerKind> kind = ParseSamplerKind(sampler);
  if (!kind.ok()) return kind.status();
  options.sampling.sampler = *kind;
  options.sampling.sampler_chosen = true;
  return absl::OkStatus();
}

absl::Status ApplyScanWindow(absl::string_view text, RunOptions& options) {
  absl::StatusOr<uint64_t> bytes = ParseSize(text);
  if (!bytes.ok()) return bytes.status();
  if (*bytes < 4096) {
    return absl::InvalidArgumentError(absl::StrCat("scan window '", text, "' is under 4K"));
  }
  options.sampling.window_bytes = *bytes;
  return absl::OkStatus();
}

absl::Status ApplyScanPeriod(absl::string_view text, RunOptions& options) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok()) return d.status();
  if (*d < absl::Milliseconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat("scan period '", text, "' is under 10ms"));
  }
  options.sampling.period = *d;
  return absl::OkStatus();
}

absl::Status ApplyScanPeriodMax(absl::string_view text, RunOptions& options) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok()) return d.status();
  options.sampling.period_max = *d;
  return absl::OkStatus();
}

absl::Status ApplySampling(const toml::table& t, absl::string_view source,
                           RunOptions& options) {
  if (absl::Status s = CheckKeys(t, {"sampler", "window", "period", "period_max", "ring_entries"},
                                 "[sampling]", source);
      !s.ok()) {
    return s;
  }
  if (const toml::node* n = t.get("sampler")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.sampler must be a string");
    if (absl::Status s = ApplySampler(*v, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("window")) {
    absl::StatusOr<std::string> text = SizeString(*n, "sampling.window", source);
    if (!text.ok()) return text.status();
    if (absl::Status s = ApplyScanWindow(*text, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("period")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.period must be a duration string such as \"1s\"");
    if (absl::Status s = ApplyScanPeriod(*v, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("period_max")) {
    auto v = n->value<std::string>();
    if (!v) return Bad(source, "sampling.period_max must be a duration string such as \"16s\"");
    if (absl::Status s = ApplyScanPeriodMax(*v, options); !s.ok()) return Bad(source, s.message());
  }
  if (const toml::node* n = t.get("ring_entries")) {
    auto v = n->value<int64_t>();
    if (!v || *v <= 0) return Bad(source, "sampling.ring_entries must be a positive integer");
    options.sampling.ring_entries = static_cast<uint32_t>(*v);
  }
  return absl::OkStatus();
}

absl::Status ApplyFlags(const RunFlags& flags, RunOptions& options) {
  if (flags.sampler) {
    if (absl::Status s = ApplySampler(*flags.sampler, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--sampler: ", s.message()));
    }
  }
  if (flags.scan_window) {
    if (absl::Status s = ApplyScanWindow(*flags.scan_window, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-window: ", s.message()));
    }
  }
  if (flags.scan_period) {
    if (absl::Status s = ApplyScanPeriod(*flags.scan_period, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-period: ", s.message()));
    }
  }
  if (flags.scan_period_max) {
    if (absl::Status s = ApplyScanPeriodMax(*flags.scan_period_max, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-period-max: ", s.message()));
    }
  }
  if (flags.ring_entries) options.sampling.ring_entries = *flags.ring_entries;
  if (flags.balance) {
    absl::StatusOr<BalanceMode> mode = ParseBalanceMode(*flags.balance);
    if (!mode.ok()) return absl::InvalidArgumentError(absl::StrCat("--balance: ", mode.status().message()));
    options.balance.mode = *mode;
  }
  if (flags.stats_interval) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(*flags.stats_interval);
    if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat("--stats-interval: ", d.status().message()));
    options.stats_interval = *d;
  }
  options.migrate_churn = flags.migrate_churn;
  if (flags.record) {
    if (flags.record->empty()) return absl::InvalidArgumentError("--record: empty file name");
    options.record_path = *flags.record;
  }
  if (flags.migrate_rate) {
    absl::StatusOr<uint64_t> rate = ParseSize(*flags.migrate_rate);
    if (!rate.ok() || *rate == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--migrate-rate: '", *flags.migrate_rate, "' is not a positive size per second (e.g. 256M)"));
    }
    options.balance.migrate_bytes_per_second = *rate;
  }
  if (flags.vcpus) options.vm.vcpus = *flags.vcpus;
  if (flags.memory) {
    absl::StatusOr<uint64_t> bytes = ParseSize(*flags.memory);
    if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("--memory: ", bytes.status().message()));
    options.vm.memory_bytes = *bytes;
  }
  if (flags.backing) {
    absl::StatusOr<Backing> b = ParseBacking(*flags.backing);
    if (!b.ok()) return absl::InvalidArgumentError(absl::StrCat("--backing: ", b.status().message()));
    options.vm.backing = *b;
  }
  if (!flags.cells.empty()) {
    options.vm.cells.clear();
    for (const std::string& spec : flags.cells) {
      absl::StatusOr<CellConfig> c = ParseCellSpec(spec);
      if (!c.ok()) return c.status();
      options.vm.cells.push_back(*std::move(c));
    }
  }
  if (flags.payload) options.payload = *flags.payload;
  if (!flags.payload_args.empty()) {
    for (const std::string& arg : flags.payload_args) {
      if (!absl::StrContains(arg, '=') || absl::StrContains(arg, ' ')) {
        return absl::InvalidArgumentError(absl::StrCat(
            "payload argument '", arg, "' must look like key=value"));
      }
    }
    options.vm.payload_args = absl::StrJoin(flags.payload_args, " ");
  }
  if (flags.placement) {
    absl::StatusOr<StaticPlacement> p = ParseStaticPlacement(*flags.placement);
    if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("--placement: ", p.status().message()));
    options.placement = *p;
  }
  if (flags.report) {
    if (*flags.report == "table") options.report = ReportFormat::kTable;
    else if (*flags.report == "json") options.report = ReportFormat::kJson;
    else return absl::InvalidArgumentError(absl::StrCat("--report: unknown format '", *flags.report, "' (expected table or json)"));
  }
  if (flags.timeout) {
    absl::StatusOr<absl::Duration> t = ParseTimeout(*flags.timeout);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("--timeout: ", t.status().message()));
    options.vm.timeout = *t;
  }
  if (flags.quiet_console) options.vm.echo_console = false;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BalanceMode> ParseBalanceMode(absl::string_view name) {
  if (name == "off") return BalanceMode::kOff;
  if (name == "advise") return BalanceMode::kAdvise;
  if (name == "on") return BalanceMode::kOn;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown balance mode '", name, "' (expected on, off or advise)"));
}

absl::string_view BalanceModeName(BalanceMode mode) {
  switch (mode) {
    case BalanceMode::kOff: return "off";
    case BalanceMode::kAdvise: return "advise";
    case BalanceMode::kOn: return "on";
  }
  return "?";
}

absl::StatusOr<SamplerKind> ParseSamplerKind(absl::string_view name) {
  if (name == "off") return SamplerKind::kOff;
  if (name == "hint") return SamplerKind::kHint;
  if (name == "ring") return SamplerKind::kRing;
  if (name == "dirtylog") return SamplerKind::kDirtyLog;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sampler '", name, "' (expected hint, ring, dirtylog or off)"));
}

absl::string_view SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kOff: return "off";
    case SamplerKind::kHint: return "hint";
    case SamplerKind::kRing: return "ring";
    case SamplerKind::kDirtyLog: return "dirtylog";
  }
  return "?";
}

absl::StatusOr<absl::Duration> ParseTimeout(absl::string_view text) {
  int64_t seconds = 0;
  absl::Duration d;
  if (absl::SimpleAtoi(text, &seconds)) {
    d = absl::Seconds(seconds);
  } else if (!absl::ParseDuration(text, &d)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a duration (try 30s, 5m or 90)"));
  }
  if (d <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' must be positive"));
  }
  return d;
}

absl::StatusOr<CellConfig> ParseCellSpec(absl::string_view spec) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cell '", spec, "' must look like SIZE:VCPUS, e.g. 256M:0-1"));
  }
  absl::StatusOr<uint64_t> bytes = ParseSize(parts[0]);
  if (!bytes.ok()) return absl::InvalidArgumentError(absl::StrCat("--cell: ", bytes.status().message()));
  absl::StatusOr<std::vector<int>> vcpus = ParseCpuList(parts[1]);
  if (!vcpus.ok() || vcpus->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--cell '", spec, "': bad vCPU list"));
  }
  return CellConfig{*bytes, *std::move(vcpus)};
}

absl::Status ApplyRunConfig(absl::string_view text, absl::string_view source,
                            RunOptions& options) {
  absl::StatusOr<toml::table> parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  if (absl::Status s = CheckKeys(root, {"vm", "payload", "placement", "report", "cell",
                                        "sampling"},
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
    if (absl::Status s = CheckKeys(*payload, {"name", "args"}, "[payload]", source); !s.ok()) return s;
    if (auto name = (*payload)["name"].value<std::string>()) options.payload = *name;
    else if (payload->contains("name")) return Bad(source, "payload.name must be a string");
    if (auto args = (*payload)["args"].value<std::string>()) options.vm.payload_args = *args;
    else if (payload->contains("args")) return Bad(source, "payload.args must be a string");
  }
  if (const toml::table* placement = root.get_as<toml::table>("placement")) {
    if (absl::Status s = CheckKeys(*placement, {"mode"}, "[placement]", source); !s.ok()) return s;
    if (auto mode = (*placement)["mode"].value<std::string>()) {
      absl::StatusOr<StaticPlacement> p = ParseStaticPlacement(*mode);
      if (!p.ok()) return Bad(source, p.status().message());
      options.placement = *p;
    }
  }
  if (const toml::table* report = root.get_as<toml::table>("report")) {
    if (absl::Status s = CheckKeys(*report, {"format"}, "[report]", source); !s.ok()) return s;
    if (auto format = (*report)["format"].value<std::string>()) {
      if (*format == "table") options.report = ReportFormat::kTable;
      else if (*format == "json") options.report = ReportFormat::kJson;
      else return Bad(source, absl::StrCat("report.format '", *format, "' (expected table or json)"));
    }
  }
  if (const toml::table* sampling = root.get_as<toml::table>("sampling")) {
    if (absl::Status s = ApplySampling(*sampling, source, options); !s.ok()) return s;
  }
  if (root.contains("cell")) {
    const toml::array* cells = root.get_as<toml::array>("cell");
    if (cells == nullptr) return Bad(source, "cell must be an array of tables ([[cell]])");
    if (absl::Status s = ApplyCells(*cells, source, options); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<RunOptions> ResolveRunOptions(const RunFlags& flags) {
  RunOptions options;
  if (!flags.config_path.empty()) {
    std::ifstream in(flags.config_path);
    if (!in) {
      return absl::NotFoundError(
          absl::StrCat("config ", flags.config_path, ": cannot open file"));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    if (absl::Status s = ApplyRunConfig(ss.str(), flags.config_path, options); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ApplyFlags(flags, options); !s.ok()) return s;
  SamplingOptions& sampling = options.sampling;
  if (sampling.period_max == absl::ZeroDuration()) {
    sampling.period_max = sampling.period * 16;
  } else if (sampling.period_max < sampling.period) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--scan-period-max ", absl::FormatDuration(sampling.period_max),
        " is shorter than --scan-period ", absl::FormatDuration(sampling.period)));
  }
  return options;
}

}  // namespace numavm
