// The balancer against placement models of the shipped 2-, 4- and 8-node
// topology files, fed access streams shaped like the guest-tools workloads:
// it must reach the best placement's locality (by ground truth) with about
// the fewest page moves,
// never bounce shared pages, follow a phase change, and respect its limits.
#include "balancer/replay/replay.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "balancer/policy/vcpu_plan.h"
#include "balancer/replay/model_placement_view.h"
#include "balancer/topology/topology_file.h"

namespace numavm {
namespace {

Topology LoadShipped(const std::string& name) {
  absl::StatusOr<Topology> t =
      LoadTopologyFile(std::string(NUMAVM_SOURCE_DIR) + "/configs/" + name);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// Other work on every node, leaving one CPU free: no node has room for a
// VM of two vCPUs or more, so its private vCPUs stay spread and their
// memory must come to them (policy/vcpu_plan.h). The tests of how pages
// move use it; on an idle host a VM that fits a node gathers there instead.
std::vector<double> BusyHost(const Topology& t) {
  std::vector<double> busy;
  for (const NumaNode& n : t.nodes) busy.push_back(n.cpus.empty() ? 0.0 : n.cpus.size() - 1.0);
  return busy;
}

enum class Shape { kNuma01, kNuma02, kShared, kPhase };

// Who uses page `p` (of `pages`) in period `period`: one of its users, as a
// hint fault would see it (whoever touches the armed page first).
int UserOf(Shape shape, uint64_t p, uint64_t pages, int vcpus, int period, int periods,
           std::mt19937& rng) {
  const int slice = static_cast<int>(p * vcpus / pages);
  switch (shape) {
    case Shape::kNuma02:
      return slice;
    case Shape::kNuma01: {  // two groups, each streams over its half
      const int group = static_cast<int>(p * 2 / pages);
      const int size = vcpus / 2;
      return group * size + static_cast<int>(rng() % size);
    }
    case Shape::kShared:
      return static_cast<int>(rng() % vcpus);
    case Shape::kPhase:  // halfway, every vCPU moves on to the next slice
      return period < periods / 2 ? slice : (slice + vcpus - 1) % vcpus;
  }
  return 0;
}

// A scan window of `window` pages advances each period (1 s) and wraps.
AccessTrace MakeTrace(Shape shape, int vcpus, uint64_t pages, int periods, uint64_t window) {
  std::mt19937 rng(42);
  AccessTrace trace;
  trace.header = {vcpus, pages, absl::Seconds(1), "synthetic", "hint"};
  uint64_t next = 0;
  for (int i = 0; i < periods; ++i) {
    TracePeriod period{absl::Seconds(i + 1), {}};
    for (uint64_t k = 0; k < window; ++k, next = (next + 1) % pages) {
      const int v = UserOf(shape, next, pages, vcpus, i, periods, rng);
      period.samples.push_back({next, v, AccessKind::kWrite, period.at});
    }
    trace.periods.push_back(std::move(period));
  }
  return trace;
}

struct Case {
  std::string topology;
  int vcpus;
};

class Convergence : public ::testing::TestWithParam<Case> {};

void ExpectNearBest(const ReplayResult& r, double max_moves = 1.2, double max_remigrated = 0.02) {
  const BalancerCounters& c = r.counters;
  EXPECT_GE(r.final_locality, 0.9 * r.best.locality)
      << "best " << r.best.locality << ", sampled over the whole run " << c.locality();
  EXPECT_LE(c.pages_migrated, max_moves * r.best.min_page_moves + 1)
      << "best needs " << r.best.min_page_moves;
  EXPECT_LE(r.remigrations, max_remigrated * c.pages_migrated) << "pages bounced";
}

// On an idle host a VM that fits a node gathers on the node holding its
// memory (all of it, first touched from vCPU 0's node): every access ends
// local and no page moves.
TEST_P(Convergence, Numa02GathersOnItsMemorysNodeWhereItFits) {
  const Topology topology = LoadShipped(GetParam().topology);
  const int vcpus = GetParam().vcpus;
  const AccessTrace trace = MakeTrace(Shape::kNuma02, vcpus, 8192, 60, 2048);
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, {});
  ASSERT_TRUE(r.ok()) << r.status();
  const int home = r->vcpu_start[0];
  if (!FitsNode(topology, {}, home, vcpus, trace.header.pages * 4096)) {
    EXPECT_NE(r->vcpu_end, std::vector<int>(vcpus, home)) << "a VM wider than a node spreads";
    return;
  }
  EXPECT_EQ(r->vcpu_end, std::vector<int>(vcpus, home));
  EXPECT_EQ(r->counters.pages_migrated, 0u);
  EXPECT_GE(r->final_locality, 0.99);
  ASSERT_TRUE(r->seconds_to_90pct_of_best.has_value());
  EXPECT_LE(*r->seconds_to_90pct_of_best, 5.0);  // the 4 s warm-up, then one period
}

// On a host whose nodes have no room for the whole VM, private vCPUs stay
// spread and the remote slices move to them.
TEST_P(Convergence, Numa02ReachesTheBest) {
  const Topology topology = LoadShipped(GetParam().topology);
  const AccessTrace trace = MakeTrace(Shape::kNuma02, GetParam().vcpus, 8192, 60, 2048);
  ReplayOptions options;
  options.other_busy = BusyHost(topology);
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_DOUBLE_EQ(r->best.locality, 1.0);
  // Memory starts on vCPU 0's node: the slices of vCPUs elsewhere must move.
  const int vcpus = GetParam().vcpus;
  uint64_t remote = 0;
  for (int v = 0; v < vcpus; ++v) remote += r->vcpu_start[v] != r->vcpu_start[0] ? 8192 / vcpus : 0;
  EXPECT_EQ(r->best.min_page_moves, remote);
  ExpectNearBest(*r);
  EXPECT_GE(r->final_locality, 0.97);
  EXPECT_EQ(r->vcpu_end, r->vcpu_start) << "private vCPUs stay spread";
  EXPECT_LT(r->start_locality, 0.9) << "memory starts on one node";
  ASSERT_TRUE(r->seconds_to_90pct_of_best.has_value());
}

TEST_P(Convergence, Numa01ReachesTheBest) {
  const Topology topology = LoadShipped(GetParam().topology);
  const AccessTrace trace = MakeTrace(Shape::kNuma01, GetParam().vcpus, 8192, 60, 2048);
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, {});
  ASSERT_TRUE(r.ok()) << r.status();
  const int half = GetParam().vcpus / 2;
  bool split_start = false;
  for (int v = 0; v < GetParam().vcpus; ++v) {
    split_start |= r->vcpu_start[v] != r->vcpu_start[v < half ? 0 : half];
  }
  if (!split_start) {
    ExpectNearBest(*r);
  } else {
    // The groups' vCPUs start on different nodes. Telling a group needs two
    // passes of samples; in the second pass, pages sampled twice by one
    // member look private and follow it, and move again when the group is
    // placed together. That costs up to ~40% extra moves on this stream.
    ExpectNearBest(*r, 1.4, 0.4);
  }
  EXPECT_EQ(r->counters.groups, 2) << "the two halves' vCPUs share memory";
  // Each group's vCPUs end on one node if they fit, else on nodes near each
  // other (the 8-node file has 2 CPUs per node: die pairs, distance 12).
  const bool fits = static_cast<int>(topology.nodes[0].cpus.size()) >= half;
  for (int g = 0; g < 2; ++g) {
    for (int v = g * half; v < (g + 1) * half; ++v) {
      const int d = topology.distance[r->vcpu_end[v]][r->vcpu_end[g * half]];
      EXPECT_LE(d, fits ? 10 : 12) << "vCPU " << v;
    }
  }
  // A group on one node gets all its memory local; one spread over two
  // nodes at best half of it.
  EXPECT_GE(r->final_locality, fits ? 0.97 : 0.45);
}

TEST_P(Convergence, SharedPagesAreNeverBounced) {
  const Topology topology = LoadShipped(GetParam().topology);
  const AccessTrace trace = MakeTrace(Shape::kShared, GetParam().vcpus, 4096, 60, 2048);
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, {});
  ASSERT_TRUE(r.ok()) << r.status();
  // Every sample of this stream comes from a random vCPU, so before the
  // group is known a few pages look private to one vCPU (sampled twice in
  // a row by it) and follow it; once the group is placed they come back.
  // That is bounded: at most 5% of the pages, once each.
  EXPECT_LE(r->bounces, 4096u / 20) << "shared pages went back and forth";
  EXPECT_LE(r->remigrations, 4096u / 10);
  // One group: its vCPUs join the memory instead. When the group fits one
  // node little moves; otherwise the two-stage filter lets some pages go
  // to the group's second node.
  EXPECT_EQ(r->counters.groups, 1);
  const bool fits = static_cast<int>(topology.nodes[0].cpus.size()) >= GetParam().vcpus;
  EXPECT_LE(r->counters.pages_migrated, fits ? 4096u / 10 : 4096u / 2);
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, Convergence,
    ::testing::Values(Case{"topology-2node.toml", 4}, Case{"topology-4node.toml", 4},
                      Case{"topology-4node.toml", 8}, Case{"topology-8node.toml", 8}),
    [](const auto& info) {
      return absl::StrCat(info.param.topology.substr(9, 5), "_", info.param.vcpus, "vcpus");
    });

// Without the two-stage filter the same shared stream bounces pages: the
// test above would catch a balancer that lost it.
TEST(Replay, SharedPagesBounceWithoutTheTwoStageFilter) {
  const Topology topology = LoadShipped("topology-2node.toml");
  const AccessTrace trace = MakeTrace(Shape::kShared, 2, 4096, 60, 2048);
  ReplayOptions options;
  options.other_busy = BusyHost(topology);
  options.balancer.page.two_stage_filter = false;
  options.balancer.grouping.join = 2.0;  // no grouping either: vCPUs stay apart
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, options);
  ASSERT_TRUE(r.ok());
  EXPECT_GT(r->remigrations, 1000u);
}

// Per-period access locality, from the balancer's counters.
std::vector<double> LocalityPerPeriod(const AccessTrace& trace, const Topology& topology,
                                      ReplayOptions options, uint64_t* moved = nullptr) {
  const std::vector<int> start = StartVcpuNodes(topology, trace.header.vcpus);
  RateLimiter limiter(options.migrate_bytes_per_second, options.migrate_bytes_per_second,
                      absl::ZeroDuration());
  ModelPlacementView view(topology, trace.header.pages, start, &limiter);
  view.set_other_busy(options.other_busy);
  for (uint64_t g = 0; g < trace.header.pages; ++g) view.Touch(g, start[0]);
  VmBalancer balancer(options.mode, topology, trace.header.vcpus, trace.header.pages, view,
                      options.balancer);
  std::vector<double> out;
  BalancerCounters before;
  for (const TracePeriod& p : trace.periods) {
    EXPECT_TRUE(balancer.OnBatch(p.samples, p.at).ok());
    BalancerCounters now = balancer.counters();
    out.push_back(static_cast<double>(now.local - before.local) /
                  static_cast<double>(now.attributed - before.attributed));
    // The rate limit: never more than the burst plus the rate since start.
    EXPECT_LE(now.bytes_migrated,
              options.migrate_bytes_per_second * (absl::ToDoubleSeconds(p.at) + 1.0));
    before = now;
  }
  if (moved) *moved = balancer.counters().pages_migrated;

  return out;
}

TEST(Replay, APhaseChangeIsFollowedWithinABoundedNumberOfPeriods) {
  const Topology topology = LoadShipped("topology-4node.toml");
  const int periods = 80;
  const AccessTrace trace = MakeTrace(Shape::kPhase, 4, 8192, periods, 2048);
  ReplayOptions options;
  options.other_busy = BusyHost(topology);
  std::vector<double> locality = LocalityPerPeriod(trace, topology, options);
  ASSERT_EQ(locality.size(), static_cast<size_t>(periods));
  EXPECT_GE(locality[periods / 2 - 1], 0.95) << "converged before the change";
  EXPECT_LE(locality[periods / 2], 0.5) << "the change is visible";
  // Each page is sampled every 4 periods; after the node change one more
  // sample is held, the next moves it: back above 90% within 12 periods.
  int recovered = -1;
  for (int i = periods / 2; i < periods; ++i) {
    if (locality[i] >= 0.9) {
      recovered = i - periods / 2;
      break;
    }
  }
  EXPECT_GE(recovered, 0) << "never recovered";
  EXPECT_LE(recovered, 12);
}

TEST(Replay, TheMigrationRateLimitHolds) {
  const Topology topology = LoadShipped("topology-2node.toml");
  const AccessTrace trace = MakeTrace(Shape::kNuma02, 2, 8192, 30, 2048);
  ReplayOptions options;
  options.other_busy = BusyHost(topology);
  options.migrate_bytes_per_second = 100 * 4096;  // 100 pages per second
  uint64_t moved = 0;
  LocalityPerPeriod(trace, topology, options, &moved);
  // vCPU 1's pages come by in every other pair of periods; the bucket does
  // not save up beyond its one-second burst, so ~100 pages per such period.
  EXPECT_GT(moved, 1000u) << "the limit was used";
  EXPECT_LE(moved, 100u * 31);
}

TEST(Replay, AFullNodeIsNeverOverfilled) {
  Topology topology = LoadShipped("topology-2node.toml");
  topology.nodes[1].memory_bytes = 1000 * 4096;  // room for 1000 pages only
  const AccessTrace trace = MakeTrace(Shape::kNuma02, 2, 8192, 40, 2048);
  ReplayOptions options;
  options.other_busy = BusyHost(topology);
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->pages_per_node[1], 1000u);
  EXPECT_GT(r->counters.migration_failures, 0u) << "ENOMEM is fed back";
}

TEST(Replay, OffMeasuresWithoutMoving) {
  const Topology topology = LoadShipped("topology-2node.toml");
  const AccessTrace trace = MakeTrace(Shape::kNuma02, 2, 8192, 20, 2048);
  ReplayOptions options;
  options.mode = BalanceMode::kOff;
  absl::StatusOr<ReplayResult> r = Replay(trace, topology, options);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->counters.pages_migrated, 0u);
  EXPECT_EQ(r->counters.vcpu_moves, 0u);
  EXPECT_NEAR(r->counters.locality(), 0.5, 0.01);  // vCPU 1's memory is remote
}

TEST(Trace, RoundTrips) {
  const AccessTrace trace = MakeTrace(Shape::kNuma01, 4, 512, 3, 100);
  std::string text = FormatTraceHeader(trace.header);
  for (const TracePeriod& p : trace.periods) text += FormatTracePeriod(p.at, p.samples);
  absl::StatusOr<AccessTrace> back = ParseTrace(text, "t");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->header.vcpus, 4);
  EXPECT_EQ(back->header.pages, 512u);
  EXPECT_EQ(back->header.payload, "synthetic");
  ASSERT_EQ(back->periods.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back->periods[i].at, trace.periods[i].at);
    ASSERT_EQ(back->periods[i].samples.size(), trace.periods[i].samples.size());
    for (size_t k = 0; k < trace.periods[i].samples.size(); ++k) {
      EXPECT_EQ(back->periods[i].samples[k].gfn, trace.periods[i].samples[k].gfn);
      EXPECT_EQ(back->periods[i].samples[k].vcpu, trace.periods[i].samples[k].vcpu);
    }
  }
}

TEST(Trace, BadInputNamesTheLine) {
  const std::string head = "numavm-trace 1\nvm vcpus=2 pages=16\n";
  struct Bad {
    std::string text;
    std::string message;
  } cases[] = {
      {"", "no vm line"},
      {"hello\n", "t:1: not a numavm trace"},
      {"numavm-trace 1\nb 1 0.0.w\n", "t:2: a period before the vm line"},
      {"numavm-trace 1\nvm vcpus=0 pages=16\n", "t:2: vcpus must be 1-255"},
      {"numavm-trace 1\nvm vcpus=2\n", "t:2: the vm line needs"},
      {"numavm-trace 1\nvm vcpus=2 pages=16 color=red\n", "unknown field 'color'"},
      {head + "b 1 10.0.w\n", "t:3: gfn 0x10 is outside the 16 guest pages"},
      {head + "b 1 1.2.w\n", "t:3: vCPU 2 does not exist"},
      {head + "b 1 1.0.x\n", "t:3: bad sample '1.0.x'"},
      {head + "b x\n", "t:3: a period line is"},
      {head + "zz\n", "t:3: unexpected line"},
  };
  for (const Bad& c : cases) {
    absl::StatusOr<AccessTrace> t = ParseTrace(c.text, "t");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.message), std::string::npos)
        << t.status().message() << " (want " << c.message << ")";
  }
}

}  // namespace
}  // namespace numavm
