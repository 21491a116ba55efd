#include "balancer/simulate/workload_model.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/size.h"

namespace numavm {
namespace {

constexpr uint64_t kPageBytes = 4096;
constexpr size_t kMaxPhases = 10000;

// Part `i` of `n` equal parts of `r` (page-aligned).
GfnRange Slice(const GfnRange& r, uint64_t i, uint64_t n) {
  const uint64_t a = r.first + r.count * i / n;
  const uint64_t b = r.first + r.count * (i + 1) / n;
  return {a, b - a};
}

// The parameters a shape accepts, read and checked once.
class Params {
 public:
  Params(const WorkloadSpec& spec) : spec_(spec) {}

  absl::StatusOr<uint64_t> Size(const std::string& key, uint64_t fallback) {
    used_.insert(key);
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    absl::StatusOr<uint64_t> v = ParseSize(it->second);
    if (!v.ok()) return Bad(key, v.status().message());
    return *v;
  }
  absl::StatusOr<double> Fraction(const std::string& key, double fallback) {
    used_.insert(key);
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    double v;
    if (!absl::SimpleAtod(it->second, &v) || !(v >= 0 && v <= 1)) {
      return Bad(key, "want a number from 0 to 1");
    }
    return v;
  }
  absl::StatusOr<int> Count(const std::string& key, int fallback, int max) {
    used_.insert(key);
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    int v;
    if (!absl::SimpleAtoi(it->second, &v) || v < 1 || v > max) {
      return Bad(key, absl::StrCat("want a whole number from 1 to ", max));
    }
    return v;
  }
  absl::StatusOr<absl::Duration> Duration(const std::string& key, absl::Duration fallback) {
    used_.insert(key);
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return fallback;
    absl::Duration d;
    double seconds;
    if (absl::SimpleAtod(it->second, &seconds)) {
      d = absl::Seconds(seconds);
    } else if (!absl::ParseDuration(it->second, &d)) {
      return Bad(key, "want a duration such as 30s or 2m");
    }
    if (d <= absl::ZeroDuration() || d == absl::InfiniteDuration()) {
      return Bad(key, "want a positive duration");
    }
    return d;
  }
  absl::StatusOr<std::vector<int>> List(const std::string& key) {
    used_.insert(key);
    std::vector<int> out;
    auto it = spec_.params.find(key);
    if (it == spec_.params.end()) return out;
    for (absl::string_view part : absl::StrSplit(it->second, '/')) {
      int v;
      if (!absl::SimpleAtoi(part, &v) || v < 1) {
        return Bad(key, "want positive whole numbers separated by '/', e.g. 1/3/4");
      }
      out.push_back(v);
    }
    return out;
  }
  // Every parameter given must have been asked for.
  absl::Status CheckAllUsed() const {
    for (const auto& [key, value] : spec_.params) {
      if (!used_.count(key)) {
        std::vector<std::string> known(used_.begin(), used_.end());
        return absl::InvalidArgumentError(
            absl::StrCat("workload ", spec_.shape, ": unknown parameter '", key,
                         "' (known: ", absl::StrJoin(known, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Bad(const std::string& key, absl::string_view why) const {
    return absl::InvalidArgumentError(
        absl::StrCat("workload ", spec_.shape, ": ", key, "=", spec_.params.at(key), ": ", why));
  }
  const WorkloadSpec& spec_;
  std::set<std::string> used_;
};

// The streams of one vCPU set over one range each, at `rate` bytes/s a vCPU.
struct Builder {
  double rate_pages = 0;  // page visits per second per vCPU
  double write = 1;

  AccessStream Stream(int vcpu, GfnRange range, double share = 1.0) const {
    return AccessStream{vcpu, range, rate_pages * share, write};
  }
};

void BuildSegments(WorkloadPhase& phase) {
  std::vector<uint64_t> cuts;
  for (const AccessStream& s : phase.streams) {
    if (s.range.count == 0 || s.visits_per_second <= 0) continue;
    cuts.push_back(s.range.first);
    cuts.push_back(s.range.end());
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    Segment seg{{cuts[i], cuts[i + 1] - cuts[i]}, {}, 0};
    for (size_t s = 0; s < phase.streams.size(); ++s) {
      const AccessStream& st = phase.streams[s];
      if (st.range.count == 0 || st.visits_per_second <= 0) continue;
      if (st.range.first <= seg.range.first && st.range.end() >= seg.range.end()) {
        seg.streams.push_back(static_cast<int>(s));
        seg.visits_per_page += st.visits_per_second / static_cast<double>(st.range.count);
      }
    }
    if (!seg.streams.empty()) phase.segments.push_back(std::move(seg));
  }
}

}  // namespace

absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(absl::string_view text) {
  WorkloadSpec spec;
  std::pair<absl::string_view, absl::string_view> head =
      absl::StrSplit(text, absl::MaxSplits(':', 1));
  spec.shape = std::string(head.first);
  if (spec.shape.empty()) return absl::InvalidArgumentError("--workload: no workload name");
  if (head.second.empty()) return spec;
  for (absl::string_view kv : absl::StrSplit(head.second, ',')) {
    std::pair<absl::string_view, absl::string_view> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (p.first.empty() || p.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workload ", text, ": '", kv, "' is not key=value"));
    }
    if (!spec.params.emplace(std::string(p.first), std::string(p.second)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--workload ", text, ": '", p.first, "' given twice"));
    }
  }
  return spec;
}

std::vector<std::string> WorkloadModel::ShapeNames() {
  return {"numa01", "numa01_read", "numa01_thread_alloc",
          "numa02", "numa02_read", "numa02_smt",
          "shared", "phase",       "idle",
          "groups", "handover",    "drift",
          "hot"};
}

absl::StatusOr<WorkloadModel> WorkloadModel::Build(const WorkloadSpec& spec, int vcpus,
                                                   uint64_t guest_pages, absl::Duration seconds) {
  const std::vector<std::string> shapes = ShapeNames();
  const std::string& shape = spec.shape;
  if (std::find(shapes.begin(), shapes.end(), shape) == shapes.end()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown workload '", shape, "' (want one of ",
                                                   absl::StrJoin(shapes, ", "), ")"));
  }
  Params params(spec);
  WorkloadModel m;
  m.name_ = shape;
  m.vcpus_ = vcpus;
  absl::StatusOr<uint64_t> size = params.Size("size", guest_pages * kPageBytes);
  if (!size.ok()) return size.status();
  if (*size < kPageBytes || *size > guest_pages * kPageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("workload ", shape, ": size=", FormatSize(*size),
                                                   " must be 4 KiB to the "
                                                   "guest's ",
                                                   FormatSize(guest_pages * kPageBytes)));
  }
  absl::StatusOr<uint64_t> rate = params.Size("rate", 4ull << 30);
  if (!rate.ok()) return rate.status();
  if (*rate < kPageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("workload ", shape,
                                                   ": rate=", spec.params.at("rate"),
                                                   ": want at least 4K (bytes per second)"));
  }
  const bool reads = shape == "numa01_read" || shape == "numa02_read";
  absl::StatusOr<double> write = params.Fraction("write", reads               ? 0.0
                                                          : shape == "shared" ? 0.5
                                                                              : 1.0);
  if (!write.ok()) return write.status();
  absl::StatusOr<int> working = params.Count("vcpus", vcpus, vcpus);
  if (!working.ok()) return working.status();
  int active = *working;
  if (shape == "numa02_smt" && !spec.params.count("vcpus")) active = (vcpus + 1) / 2;

  m.working_set_pages_ = *size / kPageBytes;
  const GfnRange all{0, m.working_set_pages_};
  const Builder b{static_cast<double>(*rate) / kPageBytes, *write};
  auto phase0 = [&](std::string label) {
    m.phases_.push_back(WorkloadPhase{absl::ZeroDuration(), std::move(label), {}, {}});
    return &m.phases_.back();
  };
  // Groups of consecutive vCPUs: group g of n.
  auto group_first = [&](int g, int n) { return (g * active + n - 1) / n; };

  if (shape == "numa01" || shape == "numa01_read" || shape == "numa01_thread_alloc") {
    const int n = active >= 2 ? 2 : 1;
    WorkloadPhase* p = phase0("run");
    for (int v = 0; v < active; ++v) {
      const int g = v * n / active;
      p->streams.push_back(
          b.Stream(v, shape == "numa01_thread_alloc" ? Slice(all, v, active) : Slice(all, g, n)));
    }
  } else if (shape == "numa02" || shape == "numa02_read" || shape == "numa02_smt") {
    WorkloadPhase* p = phase0("run");
    for (int v = 0; v < active; ++v) p->streams.push_back(b.Stream(v, Slice(all, v, active)));
  } else if (shape == "shared") {
    WorkloadPhase* p = phase0("run");
    for (int v = 0; v < active; ++v) p->streams.push_back(b.Stream(v, all));
  } else if (shape == "idle") {
    phase0("idle");
  } else if (shape == "phase") {
    absl::StatusOr<absl::Duration> at = params.Duration("at", seconds / 2);
    if (!at.ok()) return at.status();
    const int n = active >= 2 ? 2 : 1;
    for (int half = 0; half < 2; ++half) {
      WorkloadPhase phase{
          half == 0 ? absl::ZeroDuration() : *at, half == 0 ? "phase-1" : "phase-2", {}, {}};
      for (int v = 0; v < active; ++v) {
        const int g = v * n / active;
        const int first = group_first(g, n), members = group_first(g + 1, n) - first;
        const bool use_a = (g == 0) == (half == 0);
        phase.streams.push_back(
            b.Stream(v, Slice(Slice(all, use_a ? 0 : 1, 2), v - first, members)));
      }
      m.phases_.push_back(std::move(phase));
    }
  } else if (shape == "groups") {
    absl::StatusOr<std::vector<int>> sizes = params.List("sizes");
    if (!sizes.ok()) return sizes.status();
    absl::StatusOr<int> count = params.Count("n", 3, std::max(1, active));
    if (!count.ok()) return count.status();
    std::vector<int> weights = *sizes;
    if (weights.empty()) {
      // Unequal by default: group g weighs g + 1 (1:2:3 for three).
      for (int g = 0; g < std::min(*count, active); ++g) weights.push_back(g + 1);
    }
    int total = 0;
    for (int w : weights) total += w;
    if (static_cast<int>(weights.size()) > active) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload groups: ", weights.size(), " groups need at least as many vCPUs"));
    }
    // vCPUs and memory both in proportion to the weights; every group gets
    // at least one vCPU.
    WorkloadPhase* p = phase0("run");
    int vfirst = 0, wsum = 0;
    for (size_t g = 0; g < weights.size(); ++g) {
      wsum += weights[g];
      int vend =
          std::max(vfirst + 1, static_cast<int>(static_cast<int64_t>(active) * wsum / total));
      vend = std::min(vend, active - static_cast<int>(weights.size() - g - 1));
      const uint64_t mfirst = all.count * (wsum - weights[g]) / total;
      const uint64_t mend = all.count * wsum / total;
      for (int v = vfirst; v < vend; ++v)
        p->streams.push_back(b.Stream(v, {mfirst, mend - mfirst}));
      vfirst = vend;
    }
  } else if (shape == "handover" || shape == "drift") {
    const bool drift = shape == "drift";
    // Hand-over: one change, halfway (as phase), unless told how often.
    absl::StatusOr<absl::Duration> every =
        params.Duration("every", drift ? absl::Seconds(10) : seconds / 2);
    if (!every.ok()) return every.status();
    absl::StatusOr<double> step = drift ? params.Fraction("step", 0.05) : absl::StatusOr<double>(0);
    if (!step.ok()) return step.status();
    const int64_t changes = static_cast<int64_t>(std::ceil(absl::FDivDuration(seconds, *every)));
    if (changes + 1 > static_cast<int64_t>(kMaxPhases)) {
      return absl::InvalidArgumentError(
          absl::StrCat("workload ", shape, ": every=", absl::FormatDuration(*every), " over ",
                       absl::FormatDuration(seconds), " makes more than ", kMaxPhases, " phases"));
    }
    const uint64_t slice = std::max<uint64_t>(1, all.count / active);
    for (int64_t k = 0; k <= changes; ++k) {
      WorkloadPhase phase{*every * k, k == 0 ? "run" : absl::StrCat(shape, "-", k), {}, {}};
      if (drift) {
        // Every slice boundary moves `step` of a slice on each change,
        // wrapping at the end of the working set.
        const uint64_t shift = static_cast<uint64_t>(*step * slice * k) % all.count;
        for (int v = 0; v < active; ++v) {
          const GfnRange s = Slice(all, v, active);
          const uint64_t first = (s.first + shift) % all.count;
          const uint64_t head = std::min(s.count, all.count - first);
          phase.streams.push_back(b.Stream(v, {first, head}, static_cast<double>(head) / s.count));
          if (head < s.count) {
            phase.streams.push_back(
                b.Stream(v, {0, s.count - head}, static_cast<double>(s.count - head) / s.count));
          }
        }
      } else {
        // Slice i belongs to vCPU (i + k) mod active in phase k: every
        // slice changes hands, along a chain.
        for (int i = 0; i < active; ++i) {
          phase.streams.push_back(b.Stream((i + k) % active, Slice(all, i, active)));
        }
      }
      m.phases_.push_back(std::move(phase));
    }
  } else if (shape == "hot") {
    absl::StatusOr<double> hot = params.Fraction("hot", 0.01);
    if (!hot.ok()) return hot.status();
    absl::StatusOr<double> share = params.Fraction("hot_share", 0.25);
    if (!share.ok()) return share.status();
    const uint64_t hot_pages = std::max<uint64_t>(1, static_cast<uint64_t>(*hot * all.count));
    const GfnRange rest{hot_pages, all.count - std::min(all.count, hot_pages)};
    WorkloadPhase* p = phase0("run");
    for (int v = 0; v < active; ++v) {
      p->streams.push_back(b.Stream(v, {0, hot_pages}, *share));
      if (rest.count > 0) p->streams.push_back(b.Stream(v, Slice(rest, v, active), 1 - *share));
    }
  }
  if (absl::Status s = params.CheckAllUsed(); !s.ok()) return s;
  for (WorkloadPhase& p : m.phases_) BuildSegments(p);
  return m;
}

size_t WorkloadModel::PhaseAt(absl::Duration t) const {
  size_t p = 0;
  while (p + 1 < phases_.size() && phases_[p + 1].start <= t) ++p;
  return p;
}

bool WorkloadModel::Busy(size_t phase, int vcpu) const {
  for (const AccessStream& s : phases_[phase].streams) {
    if (s.vcpu == vcpu && s.visits_per_second > 0 && s.range.count > 0) return true;
  }
  return false;
}

int WorkloadModel::OwnerAtStart(uint64_t gfn) const {
  if (phases_.empty()) return -1;
  const WorkloadPhase& p = phases_[0];
  auto it = std::upper_bound(p.segments.begin(), p.segments.end(), gfn,
                             [](uint64_t g, const Segment& s) { return g < s.range.first; });
  if (it == p.segments.begin()) return -1;
  --it;
  if (!it->range.Contains(gfn)) return -1;
  int best = -1;
  double best_rate = 0;
  for (int s : it->streams) {
    const AccessStream& st = p.streams[s];
    const double r = st.visits_per_second / static_cast<double>(st.range.count);
    if (r > best_rate) {
      best_rate = r;
      best = st.vcpu;
    }
  }
  return best;
}

}  // namespace numavm
