#include "balancer/sampling/dirty_ring_sampler.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "balancer/sampling/dirty_logging.h"
#include "base/errno_status.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

absl::Status KvmError(absl::string_view what) { return ErrnoStatus(errno, what); }

// The most entries KVM holds back below a ring's size: its soft limit is
// the size less KVM_DIRTY_RING_RSVD_ENTRIES (64) and the CPU's dirty-log
// buffer (x86's PML: 512 entries).
constexpr uint32_t kMostReservedEntries = 64 + 512;

// The most entries CatchUp may move KVM's reset index by at one ring-full
// exit: no more than the soft limit, which the lag is at least.
uint32_t CatchUpLimit(uint32_t entries) {
  if (entries <= kMostReservedEntries) return 0;
  return std::min(entries / 2, entries - kMostReservedEntries);
}

uint32_t FlagsOf(const kvm_dirty_gfn& e) { return __atomic_load_n(&e.flags, __ATOMIC_ACQUIRE); }
void SetFlags(kvm_dirty_gfn& e, uint32_t flags) {
  __atomic_store_n(&e.flags, flags, __ATOMIC_RELEASE);
}

}  // namespace

absl::StatusOr<std::unique_ptr<DirtyRingSampler>> DirtyRingSampler::Create(
    int vm_fd, std::vector<GuestRamRegion> ram, std::vector<DirtyRingView> rings, Clock clock,
    absl::Duration drain_interval, ResetRingsFn reset) {
  for (size_t i = 0; i < rings.size(); ++i) {
    if (rings[i].entries == nullptr || rings[i].count == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--sampler=ring: vCPU ", i, " has no dirty ring (the VM was created without it)"));
    }
  }
  return std::unique_ptr<DirtyRingSampler>(new DirtyRingSampler(
      vm_fd, std::move(ram), std::move(rings), std::move(clock), drain_interval, std::move(reset)));
}

DirtyRingSampler::DirtyRingSampler(int vm_fd, std::vector<GuestRamRegion> ram,
                                   std::vector<DirtyRingView> rings, Clock clock,
                                   absl::Duration drain_interval, ResetRingsFn reset)
    : vm_fd_(vm_fd),
      ram_(std::move(ram)),
      rings_(std::move(rings)),
      clock_(std::move(clock)),
      drain_interval_(drain_interval),
      reset_(std::move(reset)) {
  stats_.per_vcpu.assign(rings_.size(), 0);
  empty_full_exits_.assign(rings_.size(), 0);
}

DirtyRingSampler::~DirtyRingSampler() { Stop(); }

absl::Status DirtyRingSampler::SetLogging(bool on) {
  if (absl::Status s = SetDirtyLogging(vm_fd_, ram_, on); !s.ok()) return s;
  logging_ = on;
  return absl::OkStatus();
}

absl::Status DirtyRingSampler::Start() {
  // Logging on a slot makes KVM write-protect it and push dirtied pages to
  // the rings (Arm picks which of them are reported).
  if (absl::Status s = SetLogging(true); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = false;
  }
  drainer_ = std::thread([this] { DrainLoop(); });
  return absl::OkStatus();
}

void DirtyRingSampler::DrainLoop() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), drain_interval_);
      if (stopping_) return;
    }
    (void)Drain();
    absl::Duration cpu = ThreadCpuTime();
    absl::MutexLock lock(&mu_);
    stats_.helper_cpu_time = cpu;
  }
}

absl::Status DirtyRingSampler::Drain() {
  // Harvest and reset under one lock: a vCPU whose ring fills in between
  // (OnRingFull) would find its entries harvested but not yet collected,
  // take that for an overrun and mark entries KVM never wrote as reset -
  // after which KVM's reset index runs past its dirty index, the ring
  // reads as full for good, and the vCPU exits at every entry (seen once
  // in a ThreadSanitizer run: a vCPU spinning for the test's 600 s).
  absl::MutexLock lock(&mu_);
  uint64_t harvested = 0;
  for (size_t v = 0; v < rings_.size(); ++v) harvested += HarvestRing(static_cast<int>(v));
  return harvested != 0 ? ResetRings() : absl::OkStatus();
}

absl::Status DirtyRingSampler::Arm(const ScanPlan& plan) {
  std::vector<GfnRange> armed = plan.regions;
  std::sort(armed.begin(), armed.end(),
            [](const GfnRange& a, const GfnRange& b) { return a.first < b.first; });
  uint64_t pages = 0;
  for (const GfnRange& r : armed) pages += r.count;
  absl::MutexLock lock(&mu_);
  armed_ = std::move(armed);
  stats_.pages_armed += pages;
  return absl::OkStatus();
}

uint64_t DirtyRingSampler::HarvestRing(int vcpu) {
  const auto begin = std::chrono::steady_clock::now();
  const DirtyRingView& ring = rings_[vcpu];
  const absl::Duration now = clock_();
  uint64_t harvested = 0;
  // Scan every entry: cheap (one load each), and correct even where KVM
  // overran the ring and no index can be trusted.
  for (uint32_t i = 0; i < ring.count; ++i) {
    kvm_dirty_gfn& e = ring.entries[i];
    uint32_t flags = __atomic_load_n(&e.flags, __ATOMIC_ACQUIRE);
    if ((flags & KVM_DIRTY_GFN_F_DIRTY) == 0) continue;
    const uint32_t slot = e.slot & 0xffff;
    for (const GuestRamRegion& r : ram_) {
      if (r.slot != slot || e.offset >= r.pages()) continue;
      uint64_t gfn = r.first_gfn() + e.offset;
      auto in = std::upper_bound(armed_.begin(), armed_.end(), gfn,
                                 [](uint64_t g, const GfnRange& a) { return g < a.first; });
      if (in == armed_.begin() || !std::prev(in)->Contains(gfn)) {
        ++stats_.unarmed_entries;
        continue;
      }
      if (seen_.insert(gfn * 256 + static_cast<uint64_t>(vcpu)).second) {
        pending_.push_back(AccessSample{gfn, vcpu, AccessKind::kWrite, now});
        ++stats_.samples;
        ++stats_.writes;
        ++stats_.per_vcpu[vcpu];
      }
    }
    __atomic_store_n(&e.flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
    ++harvested;
  }
  if (harvested != 0) empty_full_exits_[vcpu] = 0;
  entries_ += harvested;
  harvest_time_ += absl::FromChrono(std::chrono::steady_clock::now() - begin);
  return harvested;
}

absl::Status DirtyRingSampler::ResetRings() {
  if (reset_) return reset_();
  if (::ioctl(vm_fd_, KVM_RESET_DIRTY_RINGS, 0) < 0) return KvmError("KVM_RESET_DIRTY_RINGS");
  return absl::OkStatus();
}

void DirtyRingSampler::OnRingFull(int vcpu) {
  if (vcpu < 0 || vcpu >= static_cast<int>(rings_.size())) return;
  absl::MutexLock lock(&mu_);  // with the reset: see Drain
  if (HarvestRing(vcpu) == 0 && ++empty_full_exits_[vcpu] >= 2) {
    // Full twice running with nothing written: KVM ran past the end of the
    // ring, and its reset index lags its dirty index by at least the soft
    // limit over entries it overwrote. Never on the first empty exit: the
    // drain thread may have emptied the ring between the exit and this call.
    empty_full_exits_[vcpu] = 0;
    ++stats_.ring_overruns;
    CatchUp(vcpu);
    return;
  }
  (void)ResetRings();
}

// KVM's reset walks from its reset index while entries read reset, with no
// bound at its dirty index, and userspace sees neither index. So the
// entries it overwrote are marked one at a time: an empty entry marked
// reset is taken by the next reset (reads empty again) only if it is the
// one at the reset index, and then with the marked entries after it; from
// there the next one. Never more than CatchUpLimit entries in all: the
// lag is at least the soft limit, and a walk past the dirty index makes the
// ring read full for good (KVM's count of used entries wraps) - what
// marking the whole ring at once did (a vCPU spinning on ring-full exits,
// seen in an ASan run under load: docs/hardening.md).
void DirtyRingSampler::CatchUp(int vcpu) {
  const DirtyRingView& ring = rings_[vcpu];
  const uint32_t limit = CatchUpLimit(ring.count);
  if (limit == 0) return;
  auto entry = [&](uint32_t i) -> kvm_dirty_gfn& { return ring.entries[i & (ring.count - 1)]; };
  auto marked = [&] {
    uint32_t n = 0;
    for (uint32_t i = 0; i < ring.count; ++i) n += (FlagsOf(entry(i)) & KVM_DIRTY_GFN_F_RESET) != 0;
    return n;
  };
  // First a reset that takes what is marked already (entries harvested
  // but not yet taken); they count towards the limit.
  const uint32_t marked_before = marked();
  if (!ResetRings().ok()) return;
  uint32_t taken = marked_before - marked();
  // Marks entry `i`, resets, and says how many entries the reset took from
  // there (0: `i` is not at the reset index, or the reset failed; the mark
  // is taken back).
  auto take = [&](uint32_t i) -> uint32_t {
    uint32_t marked_after = 0;
    while (marked_after + 1 < ring.count &&
           (FlagsOf(entry(i + 1 + marked_after)) & KVM_DIRTY_GFN_F_RESET) != 0) {
      ++marked_after;
    }
    SetFlags(entry(i), KVM_DIRTY_GFN_F_RESET);
    (void)ResetRings();
    if (FlagsOf(entry(i)) == KVM_DIRTY_GFN_F_RESET) {
      SetFlags(entry(i), 0);
      return 0;
    }
    return 1 + marked_after;
  };
  // Find the reset index: the one empty entry the reset takes.
  uint32_t at = 0;
  uint32_t more = 0;
  for (; at < ring.count && more == 0 && taken < limit; ++at) {
    if (FlagsOf(entry(at)) == 0) more = take(at);
  }
  if (more == 0) return;
  taken += more;
  at += more - 1;  // the entry after the walk
  // Then on from there, while the entries are empty.
  while (taken < limit && FlagsOf(entry(at)) == 0) {
    more = take(at);
    if (more == 0) break;
    taken += more;
    at += more;
  }
}

absl::Status DirtyRingSampler::Collect(AccessBatch& out) {
  if (absl::Status s = Drain(); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    out.insert(out.end(), pending_.begin(), pending_.end());
    pending_.clear();
    seen_.clear();
    ++stats_.windows;
  }
  return absl::OkStatus();
}

void DirtyRingSampler::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (drainer_.joinable()) drainer_.join();
  if (!logging_) return;
  (void)SetLogging(false);
  absl::MutexLock lock(&mu_);
  for (size_t v = 0; v < rings_.size(); ++v) HarvestRing(static_cast<int>(v));
  pending_.clear();
  seen_.clear();
  (void)ResetRings();
}

SamplerStats DirtyRingSampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

uint64_t DirtyRingSampler::entries_harvested() const {
  absl::MutexLock lock(&mu_);
  return entries_;
}

absl::Duration DirtyRingSampler::harvest_time() const {
  absl::MutexLock lock(&mu_);
  return harvest_time_;
}

}  // namespace numavm
