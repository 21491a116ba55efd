#include "balancer/sampling/dirty_log_sampler.h"

#include <linux/kvm.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "balancer/sampling/dirty_logging.h"
#include "base/errno_status.h"

namespace numavm {
namespace {

absl::Status KvmError(absl::string_view what) { return ErrnoStatus(errno, what); }

// KVM_CLEAR_DIRTY_LOG wants first_page and num_pages in multiples of 64,
// except that num_pages may run to the end of the slot.
constexpr uint64_t kClearAlign = 64;

}  // namespace

absl::StatusOr<std::unique_ptr<DirtyLogSampler>> DirtyLogSampler::Create(
    int vm_fd, std::vector<GuestRamRegion> ram, int vcpus, Clock clock) {
  int caps = ::ioctl(vm_fd, KVM_CHECK_EXTENSION, KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2);
  if (caps <= 0 || (caps & KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE) == 0) {
    return absl::UnimplementedError(
        "--sampler=dirtylog needs KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2, which this KVM lacks");
  }
  return std::unique_ptr<DirtyLogSampler>(
      new DirtyLogSampler(vm_fd, std::move(ram), vcpus, std::move(clock)));
}

DirtyLogSampler::DirtyLogSampler(int vm_fd, std::vector<GuestRamRegion> ram, int vcpus, Clock clock)
    : vm_fd_(vm_fd), ram_(std::move(ram)), clock_(std::move(clock)) {
  for (const GuestRamRegion& r : ram_) bitmaps_.emplace_back((r.pages() + 63) / 64, 0);
  stats_.per_vcpu.assign(vcpus, 0);
}

DirtyLogSampler::~DirtyLogSampler() { Stop(); }

absl::Status DirtyLogSampler::SetLogging(bool on) {
  if (absl::Status s = SetDirtyLogging(vm_fd_, ram_, on); !s.ok()) return s;
  logging_ = on;
  return absl::OkStatus();
}

absl::Status DirtyLogSampler::Start() {
  kvm_enable_cap cap{};
  cap.cap = KVM_CAP_MANUAL_DIRTY_LOG_PROTECT2;
  cap.args[0] = KVM_DIRTY_LOG_MANUAL_PROTECT_ENABLE;
  if (::ioctl(vm_fd_, KVM_ENABLE_CAP, &cap) != 0) {
    return KvmError("KVM_ENABLE_CAP(MANUAL_DIRTY_LOG_PROTECT2)");
  }
  return SetLogging(true);
}

absl::Status DirtyLogSampler::ArmRanges(const std::vector<GfnRange>& window) {
  armed_.clear();
  uint64_t armed = 0;
  for (const GfnRange& range : window) {
    const GuestRamRegion* r = RegionOfGfn(ram_, range.first);
    if (r == nullptr) continue;
    // Widen to the alignment KVM wants; the extra pages are outside the
    // window and never reported from it.
    const uint64_t first = (range.first - r->first_gfn()) / kClearAlign * kClearAlign;
    const uint64_t end = std::min(
        (range.end() - r->first_gfn() + kClearAlign - 1) / kClearAlign * kClearAlign, r->pages());
    const uint64_t count = end - first;
    std::vector<uint64_t> ones((count + 63) / 64, ~0ull);
    kvm_clear_dirty_log clear{};
    clear.slot = r->slot;
    clear.first_page = first;
    clear.num_pages = static_cast<uint32_t>(count);
    clear.dirty_bitmap = ones.data();
    if (::ioctl(vm_fd_, KVM_CLEAR_DIRTY_LOG, &clear) != 0) {
      return KvmError(
          absl::StrCat("KVM_CLEAR_DIRTY_LOG slot ", r->slot, " pages ", first, "+", count));
    }
    armed += range.count;
    armed_.push_back(range);
  }
  absl::MutexLock lock(&mu_);
  stats_.pages_armed += armed;
  return absl::OkStatus();
}

absl::Status DirtyLogSampler::Harvest(const std::vector<GfnRange>& window, AccessBatch& out) {
  const absl::Duration now = clock_();
  uint64_t found = 0;
  for (size_t i = 0; i < ram_.size(); ++i) {
    bool touched = std::any_of(window.begin(), window.end(), [&](const GfnRange& g) {
      return RegionOfGfn(ram_, g.first) == &ram_[i];
    });
    if (!touched) continue;
    kvm_dirty_log log{};
    log.slot = ram_[i].slot;
    log.dirty_bitmap = bitmaps_[i].data();
    if (::ioctl(vm_fd_, KVM_GET_DIRTY_LOG, &log) != 0) {
      return KvmError(absl::StrCat("KVM_GET_DIRTY_LOG slot ", ram_[i].slot));
    }
    // Only the armed window counts: pages outside it were never cleared.
    for (const GfnRange& g : window) {
      if (RegionOfGfn(ram_, g.first) != &ram_[i]) continue;
      for (uint64_t gfn = g.first; gfn < g.end(); ++gfn) {
        uint64_t bit = gfn - ram_[i].first_gfn();
        if ((bitmaps_[i][bit / 64] >> (bit % 64)) & 1) {
          out.push_back(AccessSample{gfn, kUnknownVcpu, AccessKind::kWrite, now});
          ++found;
        }
      }
    }
  }
  absl::MutexLock lock(&mu_);
  stats_.samples += found;
  stats_.writes += found;
  stats_.unattributed += found;
  ++stats_.windows;
  return absl::OkStatus();
}

absl::Status DirtyLogSampler::Collect(AccessBatch& out) { return Harvest(armed_, out); }

void DirtyLogSampler::Stop() {
  if (logging_) (void)SetLogging(false);
}

SamplerStats DirtyLogSampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace numavm
