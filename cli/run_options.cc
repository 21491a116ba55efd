#include "cli/run_options.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "balancer/topology/topology.h"
#include "base/read_file.h"
#include "base/size.h"
#include "cli/report_plot.h"
#include "cli/run_config_file.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

absl::Status ApplyFlags(const RunFlags& flags, RunOptions& options) {
  if (flags.sampler) {
    if (absl::Status s = SetSampler(*flags.sampler, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--sampler: ", s.message()));
    }
  }
  if (flags.scan_window) {
    if (absl::Status s = SetScanWindow(*flags.scan_window, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-window: ", s.message()));
    }
  }
  if (flags.scan_period) {
    if (absl::Status s = SetScanPeriod(*flags.scan_period, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-period: ", s.message()));
    }
  }
  if (flags.scan_period_max) {
    if (absl::Status s = SetScanPeriodMax(*flags.scan_period_max, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-period-max: ", s.message()));
    }
  }
  struct {
    const std::optional<std::string>& value;
    const char* flag;
    absl::Status (*set)(absl::string_view, RunOptions&);
  } const scan_flags[] = {{flags.scan_stall_budget, "--scan-stall-budget", SetScanStallBudget},
                          {flags.scan_rate_min, "--scan-rate-min", SetScanRateMin},
                          {flags.scan_rate_max, "--scan-rate-max", SetScanRateMax}};
  for (const auto& f : scan_flags) {
    if (!f.value) continue;
    if (absl::Status s = f.set(*f.value, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(f.flag, ": ", s.message()));
    }
  }
  if (flags.scan_probes) {
    if (absl::Status s = SetScanProbes(*flags.scan_probes, options); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--scan-probes: ", s.message()));
    }
  }
  if (flags.ring_entries) options.sampling.ring_entries = *flags.ring_entries;
  if (flags.balance) {
    absl::StatusOr<BalanceMode> mode = ParseBalanceMode(*flags.balance);
    if (!mode.ok())
      return absl::InvalidArgumentError(absl::StrCat("--balance: ", mode.status().message()));
    options.balance.mode = *mode;
  }
  if (flags.stats_interval) {
    // 0: no progress, even on a terminal.
    absl::StatusOr<absl::Duration> d = *flags.stats_interval == "0"
                                           ? absl::StatusOr<absl::Duration>(absl::ZeroDuration())
                                           : ParseTimeout(*flags.stats_interval);
    if (!d.ok())
      return absl::InvalidArgumentError(absl::StrCat("--stats-interval: ", d.status().message()));
    if (*d != absl::ZeroDuration() && *d < kMinPrintInterval) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--stats-interval: at least ", absl::FormatDuration(kMinPrintInterval), " (or 0: none)"));
    }
    options.stats_interval = *d;
    options.stats_interval_given = true;
  }
  if (flags.placement_interval) {
    absl::StatusOr<absl::Duration> d = ParseTimeout(*flags.placement_interval);
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--placement-interval: ", d.status().message()));
    }
    if (*d < absl::Milliseconds(100)) {
      return absl::InvalidArgumentError("--placement-interval: at least 100ms");
    }
    options.placement_interval = *d;
  }
  options.migrate_churn = flags.migrate_churn;
  options.log_decisions = flags.log_decisions;
  if (options.log_decisions && options.balance.mode == BalanceMode::kOff) {
    return absl::InvalidArgumentError(
        "--log-decisions: with --balance off nothing is decided; add --balance on or advise");
  }
  options.migrate_unmapped = flags.migrate_unmapped;
  options.migrate_mapped = flags.migrate_mapped;
  if (int(flags.migrate_unmapped) + int(flags.migrate_protected) + int(flags.migrate_mapped) > 1) {
    return absl::InvalidArgumentError(
        "--migrate-protected, --migrate-unmapped and --migrate-mapped: choose one way for pages "
        "to move");
  }
  if (flags.name) {
    if (flags.name->empty() || flags.name->size() > 64 ||
        flags.name->find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789._-") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--name '", *flags.name, "': want 1-64 letters, digits, '.', '_' or '-'"));
    }
    options.name = *flags.name;
  }
  if (flags.plot) {
    if (absl::Status s = CheckPlotPath(*flags.plot); !s.ok()) return s;
    options.plot_path = *flags.plot;
    // The memory-per-node panel needs placement over time.
    if (options.placement_interval == absl::ZeroDuration()) {
      options.placement_interval = absl::Seconds(1);
    }
  }
  if (flags.record) {
    if (flags.record->empty()) return absl::InvalidArgumentError("--record: empty file name");
    options.record_path = *flags.record;
  }
  if (flags.migrate_rate) {
    absl::StatusOr<uint64_t> rate = ParseMigrateRate("--migrate-rate", *flags.migrate_rate);
    if (!rate.ok()) return rate.status();
    options.balance.migrate_bytes_per_second = *rate;
  }
  if (flags.host_migrate_rate) {
    absl::StatusOr<uint64_t> rate = ParseSize(*flags.host_migrate_rate);
    if (!rate.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--host-migrate-rate: '",
                                                     *flags.host_migrate_rate,
                                                     "' is not a size per second (e.g. 1G, or 0)"));
    }
    options.balance.host_migrate_bytes_per_second = *rate;
  }
  if (flags.migrate_threads) {
    if (absl::Status s = CheckMigrateThreads(*flags.migrate_threads); !s.ok()) return s;
    options.balance.migrate_threads = *flags.migrate_threads;
  }
  if (flags.vcpus) options.vm.vcpus = *flags.vcpus;
  if (flags.memory) {
    absl::StatusOr<uint64_t> bytes = ParseSize(*flags.memory);
    if (!bytes.ok())
      return absl::InvalidArgumentError(absl::StrCat("--memory: ", bytes.status().message()));
    options.vm.memory_bytes = *bytes;
  }
  if (flags.backing) {
    absl::StatusOr<Backing> b = ParseBacking(*flags.backing);
    if (!b.ok())
      return absl::InvalidArgumentError(absl::StrCat("--backing: ", b.status().message()));
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
  if (flags.kernel) {
    if (flags.payload) {
      return absl::InvalidArgumentError("--kernel and --payload: a VM boots one or the other");
    }
    if (!flags.payload_args.empty()) {
      return absl::InvalidArgumentError(
          "payload arguments are for payloads; a Linux guest takes --append \"...\"");
    }
    options.kernel = *flags.kernel;
    options.payload = "linux";
  } else if (flags.initrd || flags.append) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.initrd ? "--initrd" : "--append", " needs --kernel"));
  }
  if (flags.initrd) options.initrd = *flags.initrd;
  if (flags.append) options.append = *flags.append;
  if (!flags.payload_args.empty()) {
    for (const std::string& arg : flags.payload_args) {
      if (absl::StrContains(arg, ' ')) {
        return absl::InvalidArgumentError(
            absl::StrCat("payload argument '", arg, "' must look like key=value"));
      }
    }
    options.vm.payload_args = absl::StrJoin(flags.payload_args, " ");
  }
  if (flags.placement) {
    absl::StatusOr<StaticPlacement> p = ParseStaticPlacement(*flags.placement);
    if (!p.ok())
      return absl::InvalidArgumentError(absl::StrCat("--placement: ", p.status().message()));
    options.placement = *p;
  }
  if (flags.report) {
    absl::StatusOr<ReportFormat> format = ParseReportFormat(*flags.report);
    if (!format.ok())
      return absl::InvalidArgumentError(absl::StrCat("--report: ", format.status().message()));
    options.report = *format;
  }
  if (flags.timeout) {
    absl::StatusOr<absl::Duration> t = ParseTimeout(*flags.timeout);
    if (!t.ok())
      return absl::InvalidArgumentError(absl::StrCat("--duration: ", t.status().message()));
    options.vm.timeout = *t;
  }
  if (flags.quiet_console) options.vm.echo_console = false;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<uint64_t> ParseMigrateRate(absl::string_view name, absl::string_view text) {
  absl::StatusOr<uint64_t> rate = ParseSize(text);
  if (!rate.ok() || *rate == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", text, "' is not a positive size per second (e.g. 256M)"));
  }
  return *rate;
}

absl::Status CheckMigrateThreads(int threads) {
  if (threads < 1 || threads > PageMigrator::kMaxWorkers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--migrate-threads ", threads, ": want 1 to ", PageMigrator::kMaxWorkers));
  }
  return absl::OkStatus();
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
  if (d > kMaxDuration) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is more than ", absl::FormatDuration(kMaxDuration)));
  }
  return d;
}

absl::Status CheckPayloadArgs(absl::string_view args) {
  for (absl::string_view arg : absl::StrSplit(args, ' ', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(arg, absl::MaxSplits('=', 1));
    const bool has_equals = absl::StrContains(arg, '=');
    bool key_ok = has_equals && !kv.first.empty();
    for (char c : kv.first) key_ok = key_ok && (absl::ascii_isalnum(c) || c == '_');
    if (!key_ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("payload argument '", arg, "' must look like key=value"));
    }
    // What the guest's ArgU64 reads: digits and an optional K, M or G.
    absl::string_view digits = kv.second;
    int shift = 0;
    if (!digits.empty()) {
      switch (digits.back()) {
        case 'K':
        case 'k':
          shift = 10;
          break;
        case 'M':
        case 'm':
          shift = 20;
          break;
        case 'G':
        case 'g':
          shift = 30;
          break;
        default:
          break;
      }
      if (shift != 0) digits.remove_suffix(1);
    }
    uint64_t v = 0;
    const bool all_digits =
        !digits.empty() &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return absl::ascii_isdigit(c); });
    if (!all_digits || !absl::SimpleAtoi(digits, &v) || v > (uint64_t{1} << (62 - shift))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "payload argument '", arg,
          "': the value must be a whole number with an optional K, M or G (e.g. size=64M, "
          "iterations=4)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<CellConfig> ParseCellSpec(absl::string_view spec) {
  std::vector<absl::string_view> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
  if (parts.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cell '", spec, "' must look like SIZE:VCPUS, e.g. 256M:0-1"));
  }
  absl::StatusOr<uint64_t> bytes = ParseSize(parts[0]);
  if (!bytes.ok())
    return absl::InvalidArgumentError(absl::StrCat("--cell: ", bytes.status().message()));
  absl::StatusOr<std::vector<int>> vcpus = ParseCpuList(parts[1], abi::kMaxVcpus - 1);
  if (!vcpus.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cell '", spec, "': ", vcpus.status().message()));
  }
  if (vcpus->empty())
    return absl::InvalidArgumentError(absl::StrCat("--cell '", spec, "': no vCPUs"));
  return CellConfig{*bytes, *std::move(vcpus)};
}

absl::StatusOr<ReportFormat> ParseReportFormat(absl::string_view name) {
  if (name == "table") return ReportFormat::kTable;
  if (name == "json") return ReportFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown format '", name, "' (expected table or json)"));
}

absl::StatusOr<RunOptions> ResolveRunOptions(const RunFlags& flags) {
  RunOptions options;
  if (!flags.config_path.empty()) {
    absl::StatusOr<std::string> text = ReadRegularFile(flags.config_path, "config");
    if (!text.ok()) return text.status();
    if (absl::Status s = ApplyRunConfig(*text, flags.config_path, options); !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ApplyFlags(flags, options); !s.ok()) return s;
  if (absl::Status s = CheckPayloadArgs(options.vm.payload_args); !s.ok()) return s;
  SamplingOptions& sampling = options.sampling;
  if (sampling.rate.min_bytes_per_second > 0 && sampling.rate.max_bytes_per_second > 0 &&
      sampling.rate.min_bytes_per_second > sampling.rate.max_bytes_per_second) {
    return absl::InvalidArgumentError("--scan-rate-min is above --scan-rate-max");
  }
  if (sampling.period_max == absl::ZeroDuration()) {
    sampling.period_max = sampling.period * 16;
  } else if (sampling.period_max < sampling.period) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scan-period-max ", absl::FormatDuration(sampling.period_max),
                     " is shorter than --scan-period ", absl::FormatDuration(sampling.period)));
  }
  return options;
}

}  // namespace numavm
