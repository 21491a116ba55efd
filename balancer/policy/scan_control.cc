#include "balancer/policy/scan_control.h"

#include <algorithm>
#include <utility>

#include "balancer/stats/region_state.h"

namespace numavm {

ScanControl::ScanControl(std::vector<GfnRange> coverage, uint64_t align_pages,
                         const ScanConfig& config, absl::Duration fault_cost)
    : period_(config.period),
      adaptive_(config.adaptive),
      align_pages_(std::max<uint64_t>(1, align_pages)),
      probes_(align_pages >= kRegionPages ? 1 : std::max(1, config.rate.probes_per_region)),
      coverage_(std::move(coverage)),
      passes_(align_pages >= kRegionPages ? 1 : kPasses) {
  for (const GfnRange& r : coverage_) {
    total_pages_ += r.count;
    // Regions the walk visits: 2 MiB boundaries cut the ranges.
    if (r.count > 0) {
      regions_total_ += (r.end() - 1) / kRegionPages - r.first / kRegionPages + 1;
    }
  }
  if (config.window_bytes > 0) {
    window_.emplace(coverage_, config.window_bytes / 4096, align_pages_);
    periods_.emplace(
        ScanPeriodConfig{config.period, adaptive_ ? config.period_max : config.period});
    return;
  }
  // The rate's probes are what one arming covers and one fault reports: a
  // 4 KiB page, or a whole 2 MiB backing page (one a region).
  ScanRateConfig rate = config.rate;
  rate.probes_per_region = probes_;
  rate_.emplace(rate, kRegionPages * 4096, std::max(1, config.vcpus), fault_cost);
  // The first period is the shortest, at the rate's floor: it measures what
  // arming costs this host before the budget is spent on it, and a short
  // run of a small guest is sampled from its first 100 ms on.
  current_ = std::min(PeriodFor(rate_->regions_per_second()), std::min(kMinPeriod, period_));
}

absl::Duration ScanControl::PeriodFor(double regions_per_second) const {
  // A sweep a period at most: where the rate allows more, the period
  // shortens (down to kMinPeriod) so that each region is visited more often.
  if (regions_total_ == 0 || regions_per_second <= 0) return period_;
  const absl::Duration sweep = absl::Seconds(regions_total_ / regions_per_second);
  return std::clamp(sweep, std::min(kMinPeriod, period_), period_);
}

absl::Duration ScanControl::period() const { return periods_ ? periods_->period() : current_; }
absl::Duration ScanControl::period_max() const {
  return periods_ ? periods_->config().max : period_;
}
uint64_t ScanControl::period_changes() const { return periods_ ? periods_->changes() : 0; }

double ScanControl::rate_bytes_per_second() const {
  if (!rate_) return window_->window_pages() * 4096.0 / absl::ToDoubleSeconds(period());
  // What is covered: at most a sweep a period (the rest of the budget goes
  // to denser probes).
  return std::min(rate_->bytes_per_second(),
                  total_pages_ * 4096.0 / absl::ToDoubleSeconds(current_));
}

double ScanControl::ceiling_bytes_per_second() const {
  return rate_ ? rate_->ceiling_bytes_per_second() : rate_bytes_per_second();
}

absl::Duration ScanControl::host_cost_per_probe() const {
  return rate_ ? absl::Seconds(rate_->host_seconds_per_probe()) : absl::ZeroDuration();
}

absl::Duration ScanControl::host_cost_per_call() const {
  return rate_ ? absl::Seconds(rate_->host_seconds_per_call()) : absl::ZeroDuration();
}

GfnRange ScanControl::NextInOrder(bool& end) {
  end = false;
  if (range_ >= coverage_.size()) {
    range_ = 0;
    offset_ = 0;
  }
  const GfnRange& r = coverage_[range_];
  const uint64_t first = r.first + offset_;
  // To the next 2 MiB boundary of guest-physical memory, within the range.
  const uint64_t last = std::min(r.end(), (first / kRegionPages + 1) * kRegionPages);
  offset_ += last - first;
  covered_ += last - first;
  if (offset_ >= r.count) {
    ++range_;
    offset_ = 0;
  }
  if (covered_ >= total_pages_) {
    covered_ = 0;
    range_ = 0;
    offset_ = 0;
    end = true;
  }
  return {first, last - first};
}

int ScanControl::PassOf(uint64_t index, uint64_t salt) {
  // Regions go in pairs - the two whose probe runs meet at their common
  // boundary this sweep (AddProbes), armed with one call - and the pairs in
  // three passes: every 4th pair, the pairs halfway between, the rest.
  const uint64_t pair = (index + salt) >> 1;
  if (pair % 4 == 0) return 0;
  if (pair % 4 == 2) return 1;
  return 2;
}

std::optional<GfnRange> ScanControl::NextRegion() {
  for (;;) {
    bool end = false;
    const GfnRange region = NextInOrder(end);
    const int passes = coarse_ ? passes_ : 1;
    const bool take = passes == 1 || PassOf(region.first / kRegionPages, sweeps_) == pass_;
    if (end && ++pass_ >= passes) {
      pass_ = 0;
      wrapped_ = true;
    }
    if (take) return region;
    if (wrapped_) return std::nullopt;
  }
}

void ScanControl::AddProbes(ScanPlan& plan, const GfnRange& region, int probes, uint64_t run,
                            uint64_t salt) const {
  plan.regions.push_back(region);
  if (align_pages_ >= kRegionPages || region.count <= static_cast<uint64_t>(probes)) {
    plan.probes.push_back(region);  // one huge page, or a sliver: all of it
    return;
  }
  // Spread over the region at a stride of a power of two, from an offset
  // fixed per region (a hash of its index), so that each sweep samples
  // the same pages and denser sets contain sparser ones.
  const uint64_t stride = kRegionPages / probes;
  const uint64_t index = region.first / kRegionPages;
  const uint64_t base = region.first - region.first % kRegionPages;
  if (run > 1) {
    // probes / run places, a run of `run` pages each, every run within
    // its share of the region. The places alternate with each sweep
    // (`salt`) between the start of each share and its end, so that
    // successive visits look at different ones (a region used by two
    // owners then disagrees with itself across visits and is not settled
    // on one spot's evidence), and so that neighbouring regions' runs
    // meet at their common boundary - one region's last run ends where
    // the next one's first run starts - and NextArm arms the two as one
    // range: one call for two regions where calls are what costs.
    const uint64_t step = stride * run;
    const uint64_t offset = ((index + salt) & 1) == 0 ? step - run : 0;
    for (uint64_t g = base + offset; g < region.end(); g += step) {
      const uint64_t first = std::max(g, region.first), end = std::min(g + run, region.end());
      if (first < end) plan.probes.push_back({first, end - first});
    }
    return;
  }
  const uint64_t jitter = (index * 0x9e3779b97f4a7c15ull >> 40) % stride;
  for (uint64_t g = base + jitter; g < region.end(); g += stride) {
    if (g >= region.first) plan.probes.push_back({g, 1});
  }
}

void ScanControl::Coalesce(std::vector<GfnRange>& runs, uint64_t max_pages) {
  size_t out = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (out > 0 && runs[out - 1].end() == runs[i].first &&
        runs[out - 1].count + runs[i].count <= max_pages) {
      runs[out - 1].count += runs[i].count;
    } else {
      runs[out++] = runs[i];
    }
  }
  runs.resize(out);
}

std::optional<GfnRange> ScanControl::RegionRange(uint64_t index) const {
  const uint64_t first = index * kRegionPages, end = first + kRegionPages;
  for (const GfnRange& r : coverage_) {
    const uint64_t a = std::max(first, r.first), b = std::min(end, r.end());
    if (a < b) return GfnRange{a, b - a};
  }
  return std::nullopt;
}

ScanPlan ScanControl::NextArm(const Resident& resident) {
  ScanPlan plan;
  if (total_pages_ == 0) return plan;
  if (window_) {
    const uint64_t wraps = window_->wraps();
    plan.regions = window_->Next();
    plan.probes = plan.regions;
    wrapped_ = window_->wraps() != wraps;
    return plan;
  }
  const double want = rate_->regions_per_second() * absl::ToDoubleSeconds(current_) + carry_;
  uint64_t n = static_cast<uint64_t>(want);
  carry_ = want - static_cast<double>(n);
  if (n == 0 && !rate_->measured()) {
    // Until one period with probes has measured the host's cost the rate
    // stays at its floor, which on a host with slow faults is a region in
    // tens of seconds: arm one now, so that the measurement comes at once.
    n = 1;
    carry_ = 0;
  }
  // Never more than one sweep a period (the loop stops at the wrap); a
  // budget for more samples the guest more densely instead: probes double
  // (the sparser sets stay inside the denser ones) up to every page.
  int probes = probes_;
  if (align_pages_ < kRegionPages && regions_total_ > 0 && n > regions_total_) {
    while (probes * 2 <= static_cast<int>(kRegionPages) &&
           static_cast<uint64_t>(probes) * 2 * regions_total_ <=
               static_cast<uint64_t>(probes_) * n) {
      probes *= 2;
    }
    carry_ = 0;
  }
  // Where an arming call costs more than faults do, each probe position is
  // a run of neighbouring pages armed with one call (ScanRate::RunPages).
  const uint64_t run = align_pages_ < kRegionPages ? rate_->RunPages(probes) : 1;
  run_pages_ = run;
  probes_last_ = align_pages_ < kRegionPages ? probes : 1;
  // Regions whose first visit asked for a second one come first (within
  // the period's regions), then the sweep goes on.
  uint64_t armed = 0;
  while (armed < n && !revisits_.empty()) {
    const uint64_t index = revisits_.front();
    revisits_.pop_front();
    if (std::optional<GfnRange> region = RegionRange(index)) {
      // Runs at other places than the sweep's visit put them (runs only).
      AddProbes(plan, *region, probes, run, sweeps_ + 1);
      ++armed;
      ++revisits_armed_;
    }
  }
  uint64_t passed = 0;
  while (armed < n && !wrapped_) {
    const std::optional<GfnRange> next = NextRegion();
    if (!next) break;
    const GfnRange& region = *next;
    if (resident && passed < kMaxPassedOver && !resident(region)) {
      ++passed;  // nothing there: no visit, and the sweep goes on
      continue;
    }
    AddProbes(plan, region, probes, run, sweeps_);
    ++armed;
  }
  passed_total_ += passed;
  // Probes that touch are armed as one range, one call: the runs of
  // neighbouring regions, dense probes, and the huge pages of neighbouring
  // regions (up to kMaxHugeRunPages of them, so that no call holds the
  // guest's faults on a range for long).
  Coalesce(plan.probes,
           align_pages_ >= kRegionPages ? kMaxHugeRunPages * align_pages_ : kMaxRunPages);
  probes_armed_ = 0;
  // In backing pages: a 2 MiB probe costs one arming and faults once.
  for (const GfnRange& p : plan.probes)
    probes_armed_ += (p.count + align_pages_ - 1) / align_pages_;
  arm_calls_ = plan.probes.size();
  arm_calls_total_ += arm_calls_;
  regions_armed_ = plan.regions.size();
  regions_armed_total_ += regions_armed_;
  return plan;
}

absl::Duration ScanControl::OnPeriod(const ScanFeedback& f) {
  const bool wrapped = std::exchange(wrapped_, false);
  if (wrapped) {
    ++sweeps_;
    restarted_ = false;
    coarse_ = false;
  }
  if (window_) return periods_->Next(f.outcome);
  const uint64_t changed = f.outcome.dissents + f.outcome.followed;
  if (adaptive_ && passes_ > 1 && !(coarse_ && pass_ == 0) && !restarted_ && changed > 0 &&
      changed * 2 >= regions_armed_) {
    // Half the regions visited had settled and now disagree with where
    // they settled (their owner changed), or as many were set for the new
    // home of a vCPU that moved (PeriodOutcome::followed: the rest of its
    // memory is still where it was), in runs that the later passes
    // would reach only region by region. The sweep starts again here with
    // its coarse pass (and ends here, every region visited once), once a
    // sweep, so that shared memory's chance dissents cannot keep the
    // later passes away.
    pass_ = 0;
    covered_ = 0;
    restarted_ = true;
    coarse_ = true;
    ++restarts_;
  }
  if (adaptive_) {
    for (uint64_t region : f.outcome.revisit) {
      if (revisits_.size() < kMaxRevisits) revisits_.push_back(region);
    }
  }
  // Measuring only (not adaptive): the rate the budget allows, without
  // the back-off.
  const uint64_t work = adaptive_ ? f.outcome.wanted_moves + f.outcome.changing : UINT64_MAX / 4;
  rate_->OnPeriod({current_, f.vcpu_busy, regions_armed_, probes_armed_, arm_calls_, f.faults,
                   f.fault_cost, f.host_time, work, f.outcome.vcpu_moves > 0, wrapped});
  current_ = PeriodFor(rate_->regions_per_second());
  return current_;
}

}  // namespace numavm
