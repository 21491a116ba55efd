#include "balancer/sampling/prot_none_sampler.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/move_fence.h"

namespace numavm {

absl::StatusOr<std::unique_ptr<ProtNoneSampler>> ProtNoneSampler::Create(
    std::vector<GuestRamRegion> ram, int vcpus, Clock clock, MoveFence* fence,
    absl::Duration exit_round_trip) {
  if (fence == nullptr) {
    return absl::InvalidArgumentError("--sampler=prot needs the VM's move fence");
  }
  for (const GuestRamRegion& r : ram) {
    if (r.host == nullptr || r.bytes % r.page_bytes != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sampler=prot: guest slot ", r.slot, " is not whole backing pages"));
    }
  }
  return std::unique_ptr<ProtNoneSampler>(new ProtNoneSampler(
      std::move(ram), vcpus, std::move(clock), fence,
      exit_round_trip > absl::ZeroDuration() ? exit_round_trip : kExitRoundTrip));
}

ProtNoneSampler::ProtNoneSampler(std::vector<GuestRamRegion> ram, int vcpus, Clock clock,
                                 MoveFence* fence, absl::Duration exit_round_trip)
    : ram_(std::move(ram)),
      clock_(std::move(clock)),
      fence_(fence),
      exit_round_trip_(exit_round_trip) {
  stats_.per_vcpu.assign(std::max(0, vcpus), 0);
}

ProtNoneSampler::~ProtNoneSampler() {
  Stop();
  if (detach_) detach_();
}

uint64_t ProtNoneSampler::ArmAlignment() const {
  return ram_.empty() ? 1 : ram_[0].page_bytes / kGuestPageBytes;
}

absl::Status ProtNoneSampler::Start() {
  absl::MutexLock lock(&mu_);
  started_ = true;
  return absl::OkStatus();
}

absl::Duration ProtNoneSampler::FaultCost() const {
  absl::MutexLock lock(&mu_);
  return absl::Seconds(handler_seconds_) + exit_round_trip_;
}

absl::Status ProtNoneSampler::Arm(const ScanPlan& plan) {
  // While the fence is up no host code is inside guest memory (an access
  // KVM's emulator handed over holds the fence, OnFault then the access):
  // a page given back for such an access is not taken away before it is
  // done. Raised before mu_ is taken - such an access calls OnFault.
  fence_->Raise();
  struct Lower {
    MoveFence* fence;
    ~Lower() { fence->Lower(); }
  } lower{fence_};
  absl::MutexLock lock(&mu_);
  if (!started_) return absl::OkStatus();
  ++period_;
  // Past the cap, what earlier periods armed and nobody touched goes back
  // first (idle memory, seen as such), oldest first.
  if (armed_.size() + plan.probes.size() > kMaxArmedRuns) {
    std::vector<std::pair<uint64_t, uint64_t>> old;  // (period, first gfn)
    for (const auto& [first, run] : armed_) old.emplace_back(run.period, first);
    std::sort(old.begin(), old.end());
    const size_t excess = armed_.size() + plan.probes.size() - kMaxArmedRuns;
    for (size_t i = 0; i < old.size() && i < excess; ++i) {
      auto it = armed_.find(old[i].second);
      GiveBack(it->first, it->second);
      armed_.erase(it);
    }
  }
  uint64_t armed = 0;
  bool mappings_left = true;
  for (const GfnRange& range : plan.probes) {
    if (armed_.size() >= kMaxArmedRuns || !mappings_left) break;
    const GuestRamRegion* r = RegionOfGfn(ram_, range.first);
    if (r == nullptr) continue;
    const uint64_t offset = range.first - r->first_gfn();
    const uint64_t count = std::min(range.count, r->pages() - offset);
    if (count == 0) continue;
    // What is armed already (untouched since an earlier sweep) is left as
    // it is - arming costs the guest too; the gaps between are armed, one
    // call each.
    const uint64_t end = range.first + count;
    uint64_t g = range.first;
    auto it = armed_.upper_bound(g);
    if (it != armed_.begin() && std::prev(it)->first + std::prev(it)->second.pages > g) --it;
    while (g < end && armed_.size() < kMaxArmedRuns) {
      if (it != armed_.end() && it->first <= g) {  // inside an armed run
        g = std::max(g, it->first + it->second.pages);
        ++it;
        continue;
      }
      const uint64_t gap_end = it != armed_.end() ? std::min(end, it->first) : end;
      uint8_t* host = r->host + (g - r->first_gfn()) * kGuestPageBytes;
      if (::mprotect(host, (gap_end - g) * kGuestPageBytes, PROT_NONE) != 0) {
        // ENOMEM: the process's mappings ran out (vm.max_map_count); the
        // rest waits for the next period.
        if (errno == ENOMEM) {
          mappings_left = false;
          break;
        }
        return ErrnoStatus(errno, "mprotect(PROT_NONE) of a probe");
      }
      armed_[g] = Run{gap_end - g, host, period_};
      armed += gap_end - g;
      g = gap_end;
    }
  }
  stats_.pages_armed += armed;
  return absl::OkStatus();
}

void ProtNoneSampler::GiveBack(uint64_t first, const Run& run) {
  (void)first;
  // Cannot fail for a range mapped read-write before (the mappings merge
  // back); were it to, the move fence's repair gives all guest memory back.
  (void)::mprotect(run.host, run.pages * kGuestPageBytes, PROT_READ | PROT_WRITE);
}

void ProtNoneSampler::GiveBackAll() {
  for (const auto& [first, run] : armed_) GiveBack(first, run);
  armed_.clear();
}

bool ProtNoneSampler::OnFault(int vcpu, std::optional<uint64_t> gpa) {
  const auto t0 = std::chrono::steady_clock::now();
  absl::MutexLock lock(&mu_);
  if (!gpa) {
    // KVM's emulator could not reach a page, and does not say which: give
    // every probe back (this period's samples are lost, the VM runs on).
    if (armed_.empty()) return false;
    GiveBackAll();
    fence_->GivenBack();
    return true;
  }
  const uint64_t gfn = *gpa / kGuestPageBytes;
  auto it = armed_.upper_bound(gfn);
  if (it == armed_.begin()) return false;
  --it;
  const uint64_t first = it->first;
  const Run run = it->second;
  if (gfn >= first + run.pages) return false;
  // The backing page that faulted goes back; the rest of its run stays
  // armed for other pages' first accesses (a window arms many pages as
  // one run) - unless splitting it would pass the cap.
  const uint64_t align = std::max<uint64_t>(1, ArmAlignment());
  const uint64_t from = std::max(first, gfn - gfn % align);
  const uint64_t to = std::min(first + run.pages, from + align);
  armed_.erase(it);
  if (armed_.size() + 2 > kMaxArmedRuns) {
    GiveBack(first, run);
  } else {
    GiveBack(from, Run{to - from, run.host + (from - first) * kGuestPageBytes, run.period});
    if (from > first) armed_[first] = Run{from - first, run.host, run.period};
    if (to < first + run.pages) {
      armed_[to] =
          Run{first + run.pages - to, run.host + (to - first) * kGuestPageBytes, run.period};
    }
  }
  // A vCPU that faulted on it meanwhile enters again (MoveFence).
  fence_->GivenBack();
  AccessSample s;
  s.gfn = gfn;
  s.vcpu = vcpu;
  s.kind = AccessKind::kRead;  // an access: the exit does not say which kind
  s.at = clock_ ? clock_() : absl::ZeroDuration();
  pending_.push_back(s);
  ++stats_.samples;
  if (vcpu >= 0 && static_cast<size_t>(vcpu) < stats_.per_vcpu.size()) {
    ++stats_.per_vcpu[vcpu];
  } else {
    ++stats_.unattributed;
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  handler_seconds_ = handler_seconds_ == 0 ? took : 0.9 * handler_seconds_ + 0.1 * took;
  return true;
}

absl::Status ProtNoneSampler::Collect(AccessBatch& out) {
  absl::MutexLock lock(&mu_);
  out.insert(out.end(), pending_.begin(), pending_.end());
  pending_.clear();
  ++stats_.windows;
  return absl::OkStatus();
}

void ProtNoneSampler::Stop() {
  absl::MutexLock lock(&mu_);
  if (!started_) return;
  started_ = false;
  if (!armed_.empty()) {
    GiveBackAll();
    fence_->GivenBack();
  }
}

SamplerStats ProtNoneSampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace numavm
