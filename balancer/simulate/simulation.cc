#include "balancer/simulate/simulation.h"

#include <algorithm>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/rate_limiter.h"
#include "balancer/policy/scan_gate.h"
#include "balancer/replay/model_placement_view.h"
#include "balancer/replay/replay.h"
#include "balancer/simulate/ground_truth.h"
#include "base/size.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr int64_t kMaxSeconds = 65000;  // the model keeps last moves in seconds (uint16)
constexpr int kMaxNodes = 64;

// The balancer's CPU time, modelled from the work it was given so that the
// figure is the same on every run: per sample decided, per page moved, and
// per period (vCPU placement and grouping, which grow with vCPUs squared).
// The constants are fitted to --measure-cpu runs on the development machine
// (docs/simulate.md), against the model's views: a live VM adds its
// move_pages queries and moves (docs/performance.md).
struct CpuModel {
  double per_sample = 35e-9;
  double per_move = 20e-9;
  double per_period = 2e-6;
  double per_vcpu_pair = 2e-9;
};

std::vector<SimPoint> Thin(std::vector<SimPoint> series) {
  if (series.size() <= kSeriesPoints) return series;
  std::vector<SimPoint> out;
  const double step = static_cast<double>(series.size() - 1) / (kSeriesPoints - 1);
  for (size_t i = 0; i < kSeriesPoints; ++i) out.push_back(series[static_cast<size_t>(i * step)]);
  out.back() = series.back();
  return out;
}

}  // namespace

absl::Status ValidateSimulation(const SimulationOptions& o, const Topology& topology) {
  if (o.vcpus < 1 || o.vcpus > kMaxSimulatedVcpus) {
    return absl::InvalidArgumentError(
        absl::StrCat("--vcpus ", o.vcpus, ": want 1 to ", kMaxSimulatedVcpus));
  }
  if (o.memory_bytes < (16ull << 20) || o.memory_bytes > kMaxSimulatedBytes ||
      o.memory_bytes % kPageBytes != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--memory ", FormatSize(o.memory_bytes),
                                                   ": want 16 MiB to 1 TiB, in whole 4 KiB pages"));
  }
  if (o.seconds <= absl::ZeroDuration() || o.seconds > absl::Seconds(kMaxSeconds)) {
    return absl::InvalidArgumentError(absl::StrCat("--seconds ", absl::FormatDuration(o.seconds),
                                                   ": want more than 0 and at most ", kMaxSeconds));
  }
  if (topology.node_count() < 1 || topology.node_count() > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the topology has ", topology.node_count(), " nodes: want 1 to ", kMaxNodes));
  }
  uint64_t capacity = 0;
  int cpus = 0;
  for (const NumaNode& n : topology.nodes) {
    capacity += n.memory_bytes == 0 ? kMaxSimulatedBytes : n.memory_bytes;
    cpus += static_cast<int>(n.cpus.size());
  }
  if (capacity < o.memory_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("the topology's ", FormatSize(capacity),
                                                   " of memory cannot hold a ",
                                                   FormatSize(o.memory_bytes), " guest"));
  }
  if (cpus == 0) return absl::InvalidArgumentError("the topology has no CPUs");
  if (o.other_busy.size() > topology.nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--busy-cpus: ", o.other_busy.size(), " figures for ", topology.node_count(), " nodes"));
  }
  for (size_t n = 0; n < o.other_busy.size(); ++n) {
    const double node_cpus = static_cast<double>(topology.nodes[n].cpus.size());
    if (!(o.other_busy[n] >= 0 && o.other_busy[n] <= node_cpus)) {
      return absl::InvalidArgumentError(absl::StrCat("--busy-cpus: node ", topology.nodes[n].id,
                                                     " has ", topology.nodes[n].cpus.size(),
                                                     " CPUs, so 0 to ", node_cpus, " busy"));
    }
  }
  if (o.migrate_bytes_per_second == 0) {
    return absl::InvalidArgumentError("--migrate-rate must be above 0");
  }
  return absl::OkStatus();
}

absl::StatusOr<SimulationResult> Simulate(const SimulationOptions& options,
                                          const Topology& topology) {
  if (absl::Status s = ValidateSimulation(options, topology); !s.ok()) return s;
  const uint64_t pages = options.memory_bytes / kPageBytes;
  absl::StatusOr<WorkloadModel> built =
      WorkloadModel::Build(options.workload, options.vcpus, pages, options.seconds);
  if (!built.ok()) return built.status();
  const WorkloadModel& workload = *built;

  SimulationResult r;
  r.vcpu_start = StartVcpuNodes(topology, options.vcpus);
  RateLimiter limiter(options.migrate_bytes_per_second, options.migrate_bytes_per_second,
                      absl::ZeroDuration());
  ModelPlacementView view(topology, pages, r.vcpu_start, &limiter);
  view.EnableNodeCounts();
  view.set_other_busy(options.other_busy);
  view.set_move_time(options.costs.move_page, PageMigrator::kMaxTimePerPeriod,
                     options.migrate_threads);
  const WorkloadPhase& first = workload.phases()[0];
  if (options.confined > absl::ZeroDuration()) view.Confine(r.vcpu_start[0]);
  if (options.first_touch == SimFirstTouch::kSpread && !view.confined()) {
    for (const Segment& seg : first.segments) {
      const int owner = workload.OwnerAtStart(seg.range.first);
      view.TouchRange(seg.range, r.vcpu_start[owner < 0 ? 0 : owner]);
    }
  }
  // Whatever is left (all of it at boot) is touched in order from vCPU 0.
  view.TouchRange({0, workload.working_set_pages()}, r.vcpu_start[0]);

  GroundTruth truth(topology, workload, r.vcpu_start, view);
  view.set_move_listener([&truth](uint64_t gfn, int from, int to) { truth.OnMove(gfn, from, to); });
  r.has_accesses = truth.has_accesses();
  r.start_locality = truth.Locality(view.VcpuNodes());

  SamplerModel sampler(options.sampler, options.vcpus, pages, options.seed, options.costs);
  sampler.set_touch_runs(options.touch_runs);
  ScanConfig scan_config = options.scan;
  scan_config.adaptive = options.mode != BalanceMode::kOff;
  scan_config.vcpus = options.vcpus;
  ScanControl scan(sampler.Coverage(), 1, scan_config, sampler.FaultCost());
  VmBalancer balancer(options.mode, topology, options.vcpus, pages, view, options.balancer);
  absl::Duration arm_cost;  // what zapping probes cost the host
  // When the workload's own accesses begin (SimulationOptions::held_first_touch_only).
  const absl::Duration work_from =
      options.held_first_touch_only
          ? std::max(absl::ZeroDuration(), options.confined - SimulationOptions::kWorkAfterTouch)
          : absl::ZeroDuration();
  // How far the first touch has got: all of it at once, or in address
  // order at a steady pace until `work_from` (held_touch_in_order).
  // Placement and the ground truth are those of the whole first touch
  // from the start; what the pace changes is what the scan finds resident
  // to arm.
  uint64_t touched_to = workload.working_set_pages();
  auto first_touch_at = [&](absl::Duration at) {
    if (!options.held_touch_in_order || work_from <= absl::ZeroDuration() || at >= work_from) {
      touched_to = workload.working_set_pages();
      return;
    }
    touched_to = static_cast<uint64_t>(static_cast<double>(workload.working_set_pages()) *
                                       absl::FDivDuration(at, work_from));
  };
  first_touch_at(absl::ZeroDuration());
  // As the samplers that arm probes do in `run` (AccessSampler::Resident):
  // the sweep passes over regions the guest never touched.
  ScanControl::Resident resident;
  if (sampler.faults()) {
    resident = [&view, &touched_to](const GfnRange& region) {
      for (uint64_t g = region.first; g < std::min(region.end(), touched_to); ++g) {
        if (view.NodeOf(g) >= 0) return true;
      }
      return false;
    };
  }
  // The nodes the vCPUs run on, for an arming call's cost.
  auto spread = [&view] {
    const std::vector<int> nodes = view.VcpuNodes();
    return static_cast<int>(std::set<int>(nodes.begin(), nodes.end()).size());
  };
  if (options.sampler != SamplerKind::kOff) {
    sampler.set_spread(spread());
    sampler.Arm(scan.NextArm(resident));
    arm_cost += sampler.last_arm_cost();
  }

  // Bytes per second each vCPU would stream in each phase, all local.
  std::vector<std::vector<double>> rate(workload.phases().size(),
                                        std::vector<double>(options.vcpus, 0.0));
  for (size_t p = 0; p < workload.phases().size(); ++p) {
    for (const AccessStream& s : workload.phases()[p].streams) {
      rate[p][s.vcpu] += s.visits_per_second * kPageBytes;
    }
  }

  const CpuModel cpu_model;
  size_t phase = 0;
  std::vector<SimPhaseResult> phases{{first.label, 0, truth.Best(), std::nullopt, 0}};
  auto with_moved_vcpus = [&truth](SimPhaseResult& phase) {
    phase.best_moving_vcpus = truth.BestMovingVcpus().locality;
    phase.best_vcpu_nodes = truth.BestMovingVcpus().vcpu_nodes;
  };
  with_moved_vcpus(phases.back());
  std::vector<SimPoint> series;
  AccessBatch batch;
  std::vector<absl::Duration> stall_before(options.vcpus);
  absl::Duration busy_total, measured_cpu;
  double modelled_cpu = 0;
  absl::Duration t;
  absl::Duration moving;  // the last period's page moves held the loop this long
  while (t < options.seconds) {
    // As `run`'s sampling thread: the next period begins once the moves end.
    const absl::Duration t1 = std::min(t + scan.period() + moving, options.seconds);
    moving = absl::ZeroDuration();
    batch.clear();
    absl::Duration busy;
    // The speed of each vCPU's memory over this period, as placed at its start.
    std::vector<double> speed = truth.Speeds(view.VcpuNodes());
    std::vector<absl::Duration> run_time(options.vcpus);
    for (absl::Duration a = t; a < t1;) {
      const size_t p = workload.PhaseAt(a);
      if (p != phase) {
        phases.back().end_locality = truth.Locality(view.VcpuNodes());
        phase = p;
        truth.SetPhase(p);
        speed = truth.Speeds(view.VcpuNodes());
        phases.push_back(
            {workload.phases()[p].label, absl::ToDoubleSeconds(a), truth.Best(), std::nullopt, 0});
        with_moved_vcpus(phases.back());
      }
      const absl::Duration b =
          p + 1 < workload.phases().size() ? std::min(t1, workload.phases()[p + 1].start) : t1;
      // Only a first touch before `work_from`: busy, but no probe fires.
      const absl::Duration from = std::max(a, std::min(b, work_from));
      sampler.Run(workload.phases()[p], from, b, batch);
      for (int v = 0; v < options.vcpus; ++v) {
        if (!workload.Busy(p, v)) continue;
        busy += b - a;
        run_time[v] += b - from;
      }
      a = b;
    }
    std::stable_sort(batch.begin(), batch.end(),
                     [](const AccessSample& x, const AccessSample& y) { return x.at < y.at; });
    for (int v = 0; v < options.vcpus; ++v) {
      // A vCPU cannot stall for longer than it ran: past that the model's
      // touches (which ignore the stall) overstate the faults.
      const absl::Duration stalled = std::min(sampler.stall()[v] - stall_before[v], run_time[v]);
      stall_before[v] = sampler.stall()[v];
      r.stall_seconds += absl::ToDoubleSeconds(stalled);
      const double working = std::max(0.0, absl::ToDoubleSeconds(run_time[v] - stalled));
      r.guest_bytes += rate[phase][v] * speed[v] * working;
    }
    busy_total += busy;
    PeriodOutcome outcome;
    const double cpu_before = modelled_cpu;
    double move_cpu = 0;  // the model's migrations: not the scan's to pay
    if (!batch.empty()) {
      const uint64_t moved_before = view.page_moves();
      const absl::Duration cpu_start = options.measure_cpu ? ThreadCpuTime() : absl::Duration();
      absl::StatusOr<PeriodOutcome> o = balancer.OnBatch(batch, t1);
      if (options.measure_cpu) measured_cpu += ThreadCpuTime() - cpu_start;
      if (!o.ok()) return o.status();
      outcome = *o;
      move_cpu = cpu_model.per_move * (view.page_moves() - moved_before);
      moving = view.move_time_of(t1);
      modelled_cpu += cpu_model.per_period +
                      cpu_model.per_vcpu_pair * options.vcpus * options.vcpus +
                      cpu_model.per_sample * batch.size() + move_cpu;
    }
    const bool idle = !ShouldScan(busy, t1 - t);
    // The host's time for the period: the last arming and the balancer's
    // decisions (its migrations have their own limit, as in `run`).
    scan.OnPeriod({outcome, busy, batch.size(), sampler.FaultCost(),
                   sampler.last_arm_cost() + absl::Seconds(modelled_cpu - cpu_before - move_cpu)});
    if (!idle && options.sampler != SamplerKind::kOff) {
      sampler.set_spread(spread());
      first_touch_at(t1);
      sampler.Arm(scan.NextArm(resident));
      // Arming costs the host (the sampler's CPU, KVM's mappings): counted
      // with the stall, spread over the vCPUs.
      arm_cost += sampler.last_arm_cost();
    }
    ++r.periods;

    if (view.confined() && t1 >= options.confined) view.Confine(-1);
    const double locality = truth.Locality(view.VcpuNodes());
    const double seconds = absl::ToDoubleSeconds(t1);
    series.push_back({seconds, locality, truth.Best(), balancer.pages_migrated()});
    if (view.confined()) {
      // Every vCPU on the one node its memory is on: local, not placed.
      t = t1;
      continue;
    }
    if (!r.seconds_to_90pct_of_best && truth.has_accesses() && locality >= 0.9 * truth.Best()) {
      r.seconds_to_90pct_of_best = seconds;
      r.guest_bytes_to_90pct_of_best = r.guest_bytes;
    }
    SimPhaseResult& current = phases.back();
    if (!current.seconds_to_90pct_of_best && truth.has_accesses() &&
        locality >= 0.9 * current.best) {
      current.seconds_to_90pct_of_best = seconds - current.start_seconds;
    }
    if (!r.seconds_to_90pct_of_best_moving_vcpus && truth.has_accesses() &&
        locality >= 0.9 * truth.BestMovingVcpus().locality) {
      r.seconds_to_90pct_of_best_moving_vcpus = seconds;
    }
    if (!current.seconds_to_90pct_of_best_moving_vcpus && truth.has_accesses() &&
        locality >= 0.9 * current.best_moving_vcpus) {
      current.seconds_to_90pct_of_best_moving_vcpus = seconds - current.start_seconds;
    }
    t = t1;
  }
  phases.back().end_locality = truth.Locality(view.VcpuNodes());

  r.counters = balancer.counters();
  r.sampler = sampler.stats();
  r.coarse_restarts = scan.coarse_restarts();
  r.vcpu_end = view.VcpuNodes();
  r.pages_per_node = view.pages_per_node();
  r.final_locality = phases.back().end_locality;
  r.best_locality = phases.back().best;
  r.best_moving_vcpus_locality = phases.back().best_moving_vcpus;
  r.best_vcpu_nodes = phases.back().best_vcpu_nodes;
  r.phases = std::move(phases);
  r.pages_migrated = view.page_moves();
  r.min_page_moves = truth.min_page_moves();
  r.remigrations = view.remigrations();
  r.bounces = view.bounces();
  r.vcpu_moves = r.counters.vcpu_moves;
  r.stall_seconds += absl::ToDoubleSeconds(arm_cost);
  r.stall_share =
      busy_total > absl::ZeroDuration() ? r.stall_seconds / absl::ToDoubleSeconds(busy_total) : 0;
  r.balancer_cpu_seconds = modelled_cpu;
  if (options.measure_cpu) r.balancer_cpu_seconds_measured = absl::ToDoubleSeconds(measured_cpu);
  r.series = Thin(std::move(series));
  return r;
}

}  // namespace numavm
