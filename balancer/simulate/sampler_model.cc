#include "balancer/simulate/sampler_model.h"

#include <algorithm>
#include <cmath>

namespace numavm {
namespace {

// Sorted, disjoint union of `a` and `b`.
std::vector<GfnRange> Union(std::vector<GfnRange> ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const GfnRange& x, const GfnRange& y) { return x.first < y.first; });
  std::vector<GfnRange> out;
  for (const GfnRange& r : ranges) {
    if (r.count == 0) continue;
    if (!out.empty() && r.first <= out.back().end()) {
      const uint64_t end = std::max(out.back().end(), r.end());
      out.back().count = end - out.back().first;
    } else {
      out.push_back(r);
    }
  }
  return out;
}

// Pages of `r` in `armed` (sorted, disjoint).
uint64_t Overlap(const std::vector<GfnRange>& armed, const GfnRange& r) {
  auto it = std::upper_bound(armed.begin(), armed.end(), r.first,
                             [](uint64_t g, const GfnRange& a) { return g < a.end(); });
  uint64_t n = 0;
  for (; it != armed.end() && it->first < r.end(); ++it) {
    n += std::min(it->end(), r.end()) - std::max(it->first, r.first);
  }
  return n;
}

}  // namespace

SamplerModel::SamplerModel(SamplerKind kind, int vcpus, uint64_t pages, uint64_t seed,
                           SamplerCosts costs)
    : kind_(kind), pages_(pages), costs_(costs), random_(seed), stall_(vcpus) {
  stats_.per_vcpu.assign(vcpus, 0);
}

uint64_t SamplerModel::armed_pages() const {
  uint64_t n = 0;
  for (const GfnRange& r : armed_) n += r.count;
  return n;
}

void SamplerModel::Arm(const ScanPlan& plan) {
  if (kind_ == SamplerKind::kOff) return;
  const std::vector<GfnRange>& ranges = faults() ? plan.probes : plan.regions;
  std::vector<GfnRange> clipped;
  uint64_t asked = 0;
  for (GfnRange r : ranges) {
    if (r.first >= pages_) continue;
    r.count = std::min(r.count, pages_ - r.first);
    asked += r.count;
    clipped.push_back(r);
  }
  last_arm_cost_ = absl::ZeroDuration();
  if (faults()) {
    // A zapped (or write-protected) page stays unmapped until touched: the new window adds to
    // what earlier windows left armed, and a page still armed is not
    // zapped again.
    // A probe or a run of neighbouring probe pages is one call (one
    // shootdown) for the host, however many of its pages it zaps; a larger
    // range (a window, a huge page) is charged per 4 KiB page.
    double calls = 0;
    for (const GfnRange& r : clipped) {
      const uint64_t fresh = r.count - Overlap(armed_, r);
      if (fresh == 0) continue;
      calls += r.count <= kMaxRunPages ? 1.0 : static_cast<double>(fresh);
    }
    const uint64_t before = armed_pages();
    clipped.insert(clipped.end(), armed_.begin(), armed_.end());
    armed_ = Union(std::move(clipped));
    const uint64_t zapped = armed_pages() - before;
    stats_.pages_armed += zapped;
    last_arm_cost_ = costs_.arm_page * calls * (costs_.arm_per_node ? spread_ : 1);
  } else {
    stats_.pages_armed += asked;
    // The dirty log harvests, and the ring reports, only what was armed last.
    armed_ = Union(std::move(clipped));
  }
  ++stats_.windows;
}

uint64_t SamplerModel::Advance(uint64_t g, uint64_t end, double p) {
  if (g >= end) return end;
  const uint64_t skip = random_.Skip(p);
  return skip >= end - g ? end : g + skip;
}

void SamplerModel::Report(const AccessSample& s, AccessBatch& out) {
  out.push_back(s);
  ++stats_.samples;
  if (s.kind == AccessKind::kWrite) {
    ++stats_.writes;
  } else {
    ++stats_.reads;
  }
  if (s.vcpu >= 0) {
    ++stats_.per_vcpu[s.vcpu];
    stall_[s.vcpu] += FaultCost();
  } else {
    ++stats_.unattributed;
  }
}

void SamplerModel::Run(const WorkloadPhase& phase, absl::Duration from, absl::Duration to,
                       AccessBatch& out) {
  const double span = absl::ToDoubleSeconds(to - from);
  if (span <= 0 || kind_ == SamplerKind::kOff) return;
  // When within [from, to) a page with `rate` visits a second is first
  // visited, given that it is.
  auto first_visit = [&](double rate) {
    const double p = -std::expm1(-rate * span);
    return from + absl::Seconds(-std::log1p(-random_.Uniform() * p) / rate);
  };

  if (kind_ == SamplerKind::kRing) {
    // Each vCPU's writes, page by page: drawn where armed, charged by
    // expectation elsewhere.
    for (const Segment& seg : phase.segments) {
      // How much of the segment is armed, piece by piece.
      std::vector<GfnRange> inside;
      auto it = std::upper_bound(armed_.begin(), armed_.end(), seg.range.first,
                                 [](uint64_t g, const GfnRange& a) { return g < a.first; });
      if (it != armed_.begin()) --it;
      for (; it != armed_.end() && it->first < seg.range.end(); ++it) {
        const uint64_t a = std::max(it->first, seg.range.first);
        const uint64_t b = std::min(it->end(), seg.range.end());
        if (b > a) inside.push_back({a, b - a});
      }
      uint64_t armed_pages = 0;
      for (const GfnRange& r : inside) armed_pages += r.count;
      for (int si : seg.streams) {
        const AccessStream& st = phase.streams[si];
        const double rate = st.visits_per_second / st.range.count * st.write_fraction;
        if (rate <= 0) continue;
        const double p = -std::expm1(-rate * span);
        stall_[st.vcpu] +=
            costs_.write_protect_fault * (p * static_cast<double>(seg.range.count - armed_pages));
        for (const GfnRange& r : inside) {
          for (uint64_t g = Advance(r.first, r.end(), p); g < r.end();
               g = Advance(g + 1, r.end(), p)) {
            Report({g, st.vcpu, AccessKind::kWrite, first_visit(rate)}, out);
          }
        }
      }
    }
    return;
  }

  // hint, evict, prot, wp and dirtylog: the armed ranges against the
  // covered segments; a touched (hint, evict, prot) or written (wp,
  // dirtylog) page is reported and disarmed, the rest stay armed.
  const bool hint = kind_ == SamplerKind::kHint || kind_ == SamplerKind::kEvict ||
                    kind_ == SamplerKind::kProtNone;
  const bool attributed = faults();
  std::vector<GfnRange> still;
  auto keep = [&](uint64_t first, uint64_t end) {
    if (end > first) still.push_back({first, end - first});
  };
  auto seg = phase.segments.begin();
  for (const GfnRange& a : armed_) {
    uint64_t g = a.first;
    while (g < a.end()) {
      while (seg != phase.segments.end() && seg->range.end() <= g) ++seg;
      if (seg == phase.segments.end() || seg->range.first >= a.end()) {
        keep(g, a.end());
        break;
      }
      if (seg->range.first > g) {  // not touched by anyone: stays armed
        keep(g, seg->range.first);
        g = seg->range.first;
      }
      const uint64_t end = std::min(a.end(), seg->range.end());
      // Per-page visit rate of what this sampler sees here.
      double rate = 0;
      for (int si : seg->streams) {
        const AccessStream& st = phase.streams[si];
        rate += st.visits_per_second / st.range.count * (hint ? 1.0 : st.write_fraction);
      }
      if (rate <= 0) {
        keep(g, end);
        g = end;
        continue;
      }
      const double p = -std::expm1(-rate * span);
      uint64_t next = Advance(g, end, p);
      const AccessStream* run_by = nullptr;  // set_touch_runs: the run's toucher
      uint64_t run_first = 0;
      while (next < end) {
        keep(g, next);
        AccessSample s{next, kUnknownVcpu, AccessKind::kWrite, first_visit(rate)};
        // Who touched it: a stream in proportion to its rate (or the one
        // that touched the run it is in); a read or a write as that stream
        // does.
        const AccessStream* by = nullptr;
        if (touch_runs_ && run_by != nullptr && next - run_first < kMaxRunPages) {
          by = run_by;
        } else {
          double pick = random_.Uniform() * rate;
          for (int si : seg->streams) {
            const AccessStream& st = phase.streams[si];
            by = &st;
            pick -= st.visits_per_second / st.range.count * (hint ? 1.0 : st.write_fraction);
            if (pick <= 0) break;
          }
          run_by = by;
          run_first = next;
        }
        if (attributed) s.vcpu = by->vcpu;
        if (hint) {
          s.kind = random_.Uniform() < by->write_fraction ? AccessKind::kWrite : AccessKind::kRead;
        }
        Report(s, out);
        g = next + 1;
        next = Advance(g, end, p);
      }
      keep(g, end);
      g = end;
    }
  }
  armed_ = Union(std::move(still));
}

}  // namespace numavm
