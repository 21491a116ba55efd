// Options of `numavm run`, from flags and an optional TOML config file
// (cli/run_config_file.h): defaults, then the file, then the flags.
#ifndef NUMAVM_CLI_RUN_OPTIONS_H_
#define NUMAVM_CLI_RUN_OPTIONS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/policy/scan_rate.h"
#include "balancer/policy/static_placement.h"
#include "balancer/sampling/sampler_kind.h"
#include "balancer/vm_balancer.h"
#include "vmm/vm_config.h"

namespace numavm {

enum class ReportFormat { kTable, kJson };

// How guest memory access is tracked (see balancer/sampling/).
struct SamplingOptions {
  SamplerKind sampler = SamplerKind::kHint;
  bool sampler_chosen = false;  // false: hint, or dirtylog where hint cannot work
  // 0 (default): sample regions at a controlled rate (policy/scan_rate.h);
  // else the fixed-window scanner, this many bytes armed per period.
  uint64_t window_bytes = 0;
  absl::Duration period = absl::Seconds(1);  // also the shortest adaptive period
  // With a fixed window: the longest period the adaptive scan period backs
  // off to while balancing (policy/scan_period.h); zero: 16 times `period`.
  absl::Duration period_max = absl::ZeroDuration();
  ScanRateConfig rate;            // regions: stall budget, floor, ceiling, probes
  uint32_t ring_entries = 16384;  // per vCPU, with --sampler=ring
};

struct BalanceOptions {
  BalanceMode mode = BalanceMode::kOff;  // off still measures locality
  uint64_t migrate_bytes_per_second = 256ull << 20;
  // Shared by all numavm processes on the host (host_budget.h); 0: none.
  uint64_t host_migrate_bytes_per_second = 1ull << 30;
  // Threads that may share a period's page moves (PageMigrator::set_workers).
  int migrate_threads = PageMigrator::kDefaultWorkers;
};

struct RunOptions {
  VmConfig vm;
  std::string payload = "numa02";  // a guest-tools name or a path
  // --kernel: a Linux guest instead of a payload, with --initrd, --append.
  std::string kernel;
  std::string initrd;
  std::string append = "console=ttyS0 panic=-1";
  StaticPlacement placement = StaticPlacement::kNone;
  ReportFormat report = ReportFormat::kTable;
  SamplingOptions sampling;
  BalanceOptions balance;
  absl::Duration stats_interval = absl::ZeroDuration();  // 0: no live stats
  // --stats-interval was given (0 included); else progress is printed on
  // a terminal only (cli/run_progress.h).
  bool stats_interval_given = false;
  // 0: none; else the declared memory's placement recorded this often
  // (placement_series in the JSON report).
  absl::Duration placement_interval = absl::ZeroDuration();
  std::string record_path;     // --record: the sampled access stream goes here
  std::string name;            // --name; empty: PAYLOAD-PID
  std::string plot_path;       // --plot FILE.svg (cli/report_plot.h)
  bool migrate_churn = false;  // --migrate-churn (cli/migration_churn.h)
  // --log-decisions: each decision to move memory on stderr as it is
  // made, with the run's time (--balance on or advise).
  bool log_decisions = false;
  // --migrate-unmapped: memfd and hugetlb pages move with the guest's
  // mappings dropped first, through the alias process
  // (balancer/actuation/unmapped_moves.h).
  bool migrate_unmapped = false;
  // --migrate-mapped: each page moves where the guest maps it (a TLB
  // shootdown and a KVM flush per page). By default each contiguous run of
  // a batch is made PROT_NONE first and its pages move where they are
  // (balancer/actuation/protected_moves.h), as the kernel's balancing moves
  // pages, where the kernel can (Linux 6.5+) - --migrate-protected asks for
  // that default by name.
  bool migrate_mapped = false;
};

// Raw flag values; unset ones leave the config file's (or default) value.
struct RunFlags {
  std::string config_path;
  std::optional<int> vcpus;
  std::optional<std::string> memory;
  std::optional<std::string> backing;
  std::vector<std::string> cells;  // "SIZE:VCPULIST"
  std::optional<std::string> payload;
  std::vector<std::string> payload_args;  // "key=value"
  std::optional<std::string> kernel;
  std::optional<std::string> initrd;
  std::optional<std::string> append;
  std::optional<std::string> placement;
  std::optional<std::string> report;
  std::optional<std::string> timeout;
  bool quiet_console = false;
  std::optional<std::string> sampler;
  std::optional<std::string> scan_window;
  std::optional<std::string> scan_period;
  std::optional<std::string> scan_period_max;
  std::optional<std::string> scan_stall_budget;
  std::optional<std::string> scan_rate_min;
  std::optional<std::string> scan_rate_max;
  std::optional<int> scan_probes;
  std::optional<uint32_t> ring_entries;
  std::optional<std::string> balance;
  std::optional<std::string> migrate_rate;
  std::optional<std::string> host_migrate_rate;
  std::optional<int> migrate_threads;
  std::optional<std::string> stats_interval;
  std::optional<std::string> placement_interval;
  std::optional<std::string> record;
  std::optional<std::string> name;
  std::optional<std::string> plot;
  bool migrate_churn = false;
  bool log_decisions = false;
  bool migrate_unmapped = false;
  bool migrate_protected = false;
  bool migrate_mapped = false;
};

// Applies the config file (if any), then the flags, onto defaults.
absl::StatusOr<RunOptions> ResolveRunOptions(const RunFlags& flags);

// One setting each, shared by the flags and the config file; the message
// names the value, the caller names the flag or key
// (cli/run_scan_settings.cc).
absl::Status SetSampler(absl::string_view name, RunOptions& options);
absl::Status SetScanWindow(absl::string_view size, RunOptions& options);
absl::Status SetScanPeriod(absl::string_view duration, RunOptions& options);
absl::Status SetScanPeriodMax(absl::string_view duration, RunOptions& options);
absl::Status SetScanStallBudget(absl::string_view share, RunOptions& options);
absl::Status SetScanRateMin(absl::string_view size, RunOptions& options);
absl::Status SetScanRateMax(absl::string_view size, RunOptions& options);
absl::Status SetScanProbes(int64_t probes, RunOptions& options);

absl::StatusOr<ReportFormat> ParseReportFormat(absl::string_view name);
// "256M:0-1" -> a cell.
absl::StatusOr<CellConfig> ParseCellSpec(absl::string_view spec);
// "30s", "5m", "1h30m" or plain seconds.
// The longest duration any flag or config key takes (100 days).
inline constexpr absl::Duration kMaxDuration = absl::Hours(24 * 100);
// The shortest interval between printed lines (--stats-interval, report --watch).
inline constexpr absl::Duration kMinPrintInterval = absl::Milliseconds(100);

absl::StatusOr<absl::Duration> ParseTimeout(absl::string_view text);

// --migrate-rate, wherever it is taken: a size per second above 0; the
// error names the flag (or config key) `name`.
absl::StatusOr<uint64_t> ParseMigrateRate(absl::string_view name, absl::string_view text);
// --migrate-threads, wherever it is taken: 1 to PageMigrator::kMaxWorkers.
absl::Status CheckMigrateThreads(int threads);

// Payload arguments as the guest reads them: "key=value ..." where every
// value is a whole number with an optional K, M or G suffix.
absl::Status CheckPayloadArgs(absl::string_view args);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_OPTIONS_H_
