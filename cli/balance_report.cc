#include "cli/balance_report.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/size.h"

namespace numavm {
namespace {

// Access locality over the recent window, one named point per period.
nlohmann::json LocalitySeries(const BalancerCounters& c) {
  nlohmann::json series = nlohmann::json::array();
  for (const BalanceSeriesPoint& p : c.locality_series) {
    series.push_back({{"seconds", p.seconds},
                      {"locality", p.locality},
                      {"pages_migrated", p.pages_migrated},
                      {"vcpu_groups", p.vcpu_groups}});
  }
  return series;
}

}  // namespace

nlohmann::json BalancerCountersToJson(const BalancerCounters& c) {
  auto ratio = [](uint64_t attributed, double value) {
    return attributed ? nlohmann::json(value) : nlohmann::json(nullptr);
  };
  return {
      {"samples", c.samples},
      {"attributed", c.attributed},
      {"local", c.local},
      {"access_locality", ratio(c.attributed, c.locality())},
      {"window_periods_max", kLocalityWindow},
      {"window_seconds_max", absl::ToDoubleSeconds(kLocalityWindowTime)},
      {"window_access_locality", ratio(c.window_attributed, c.window_locality())},
      {"periods", c.periods},
      {"pages_migrated", c.pages_migrated},
      {"bytes_migrated", c.bytes_migrated},
      {"pages_migrated_unmapped", c.pages_migrated_unmapped},
      {"migration_failures", c.migration_failures},
      {"migrations_deferred", c.migrations_deferred},
      {"vcpu_moves", c.vcpu_moves},
      {"remigrations", c.remigrations},
      {"vcpu_groups", c.groups},
      {"cpu_seconds", absl::ToDoubleSeconds(c.cpu_time)},
      {"move_cpu_seconds", absl::ToDoubleSeconds(c.move_cpu_time)},
      {"move_seconds",
       {{"batches", c.move_times.batches},
        {"pages", c.move_times.pages},
        {"stage", absl::ToDoubleSeconds(c.move_times.stage)},
        {"move", absl::ToDoubleSeconds(c.move_times.move)},
        {"query", absl::ToDoubleSeconds(c.move_times.query)},
        {"unstage", absl::ToDoubleSeconds(c.move_times.unstage)},
        {"parallel_calls", c.move_times.parallel_calls},
        {"most_threads", c.move_times.most_workers},
        {"helper_cpu", absl::ToDoubleSeconds(c.move_times.helper_cpu)}}},
      {"state_bytes", c.state_bytes},
      {"vcpu_nodes", c.vcpu_nodes},
      {"vcpu_group_of", c.vcpu_group_of},
      {"locality_series", LocalitySeries(c)},
      {"regions_moved", c.regions_moved},
      {"brackets",
       {{"borne_out", c.brackets_borne_out},
        {"contradicted", c.brackets_contradicted},
        {"trusted", c.brackets_trusted}}},
      {"neighbour_runs",
       {{"runs", c.neighbours.runs}, {"turns", c.neighbours.turns}, {"cuts", c.neighbours.cuts}}},
      {"decisions", c.decisions.ByName()}};
}

std::string BalanceVerdict(const BalancerCounters& c, BalanceMode mode) {
  if (c.attributed == 0 || c.locality_series.empty()) {
    return "nothing attributed was sampled: access locality unknown";
  }
  const double start = c.locality_series.front().locality;
  const double end = c.window_attributed ? c.window_locality() : c.locality();
  std::string out = absl::StrFormat("access locality %.1f%% -> %.1f%%", 100 * start, 100 * end);
  if (end > start) {
    // When the series first got 90% of the way from start to end.
    const double target = start + 0.9 * (end - start);
    const double t0 = c.locality_series.front().seconds;
    for (const BalanceSeriesPoint& p : c.locality_series) {
      if (p.locality >= target - 1e-12) {
        absl::StrAppend(&out, absl::StrFormat(" (90%% of the way after %.0f s)", p.seconds - t0));
        break;
      }
    }
  }
  if (mode == BalanceMode::kOn) {
    absl::StrAppend(&out, ", ", FormatSize(c.bytes_migrated), " moved (", c.pages_migrated,
                    " pages), ", c.vcpu_moves, " vCPU moves");
  } else {
    absl::StrAppend(&out, ", nothing moved (--balance ", BalanceModeName(mode), ")");
  }
  return out;
}

VmBalancer::Advice AdviceOnStderr() {
  return [](uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason) {
    if (pages == 1) {
      std::fprintf(stderr, "advise: move gfn 0x%lx from node index %d to %d (%s)\n",
                   static_cast<unsigned long>(gfn), from, to, std::string(reason).c_str());
    } else {
      std::fprintf(stderr, "advise: move gfns 0x%lx+%lu to node index %d (%s)\n",
                   static_cast<unsigned long>(gfn), static_cast<unsigned long>(pages), to,
                   std::string(reason).c_str());
    }
  };
}

VmBalancer::Advice DecisionsOnStderr(absl::Time start) {
  return [start](uint64_t gfn, uint64_t pages, int from, int to, absl::string_view reason) {
    std::fprintf(stderr,
                 "numavm: %.1f s decided: move gfns 0x%lx+%lu from node index %d to %d (%s)\n",
                 absl::ToDoubleSeconds(absl::Now() - start), static_cast<unsigned long>(gfn),
                 static_cast<unsigned long>(pages), from, to, std::string(reason).c_str());
  };
}

std::string BalancerCountersText(const BalancerCounters& c) {
  std::string out;
  if (c.attributed) {
    absl::StrAppend(&out,
                    absl::StrFormat("access locality %.1f%% (%u local of %u attributed samples",
                                    100.0 * c.locality(), c.local, c.attributed));
    if (c.samples > c.attributed) {
      // Samples of a page that was not resident by the time the balancer
      // looked, or of no known vCPU, cannot be local or remote.
      absl::StrAppend(&out,
                      absl::StrFormat("; %u of the %u samples had no vCPU or no resident page",
                                      c.samples - c.attributed, c.samples));
    }
    if (c.window_attributed) {
      absl::StrAppend(&out, absl::StrFormat("; recent %.1f%%", 100.0 * c.window_locality()));
    }
    absl::StrAppend(&out, ")");
  } else {
    absl::StrAppend(&out, "no attributed samples (locality unknown)");
  }
  absl::StrAppend(
      &out, absl::StrFormat(
                ", %u pages migrated (%s), %u failed, %u deferred, %u vCPU moves, %d vCPU groups, "
                "balancer CPU %.3f s",
                c.pages_migrated, FormatSize(c.bytes_migrated), c.migration_failures,
                c.migrations_deferred, c.vcpu_moves, c.groups, absl::ToDoubleSeconds(c.cpu_time)));
  return out;
}

}  // namespace numavm

namespace numavm {

std::string ModelMemoryText(const std::vector<uint64_t>& pages_per_node) {
  std::string out = "memory per model node:";
  for (size_t n = 0; n < pages_per_node.size(); ++n) {
    absl::StrAppend(&out, " ", n, ":", FormatSize(pages_per_node[n] * 4096));
  }
  return out;
}

}  // namespace numavm
