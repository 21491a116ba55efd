#include "balancer/sampling/hint_fault_sampler.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

absl::Status Errno(absl::string_view what) {
  const int err = errno;
  absl::Status s = ErrnoStatus(err, what);
  if (err != EPERM) return s;
  return absl::Status(s.code(), absl::StrCat(s.message(),
                                             " (hinting faults need CAP_SYS_PTRACE, "
                                             "or vm.unprivileged_userfaultfd=1)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<HintFaultSampler>> HintFaultSampler::Create(
    std::vector<GuestRamRegion> ram, int vcpus, VcpuOfThread vcpu_of_thread, Clock clock,
    HintFaults kind) {
  for (const GuestRamRegion& r : ram) {
    if (kind == HintFaults::kMinor && !r.shared_file) {
      return absl::FailedPreconditionError(
          "--sampler=hint needs --backing=memfd or hugetlb: anonymous memory has no page "
          "cache for userfaultfd minor faults (use --sampler=wp, ring or dirtylog)");
    }
    if (kind == HintFaults::kEvict && (r.shared_file || r.page_bytes != kGuestPageBytes)) {
      return absl::FailedPreconditionError(
          "--sampler=evict needs --backing=anon (4 KiB pages: evicting part of a huge page "
          "would split it); on memfd or hugetlb memory use --sampler=hint, on thp wp");
    }
    if (kind == HintFaults::kWriteProtect && r.shared_file) {
      return absl::FailedPreconditionError(
          "--sampler=wp needs --backing=anon or thp: on memfd or hugetlb memory use "
          "--sampler=hint, "
          "which sees reads too");
    }
  }
  return std::unique_ptr<HintFaultSampler>(new HintFaultSampler(
      std::move(ram), vcpus, std::move(vcpu_of_thread), std::move(clock), kind));
}

HintFaultSampler::HintFaultSampler(std::vector<GuestRamRegion> ram, int vcpus,
                                   VcpuOfThread vcpu_of_thread, Clock clock, HintFaults kind)
    : ram_(std::move(ram)),
      kind_(kind),
      vcpu_of_thread_(std::move(vcpu_of_thread)),
      clock_(std::move(clock)) {
  stats_.per_vcpu.assign(vcpus, 0);
  uint64_t end = 0;
  for (const GuestRamRegion& r : ram_) end = std::max(end, r.first_gfn() + r.pages());
  armed_ = std::vector<std::atomic<uint64_t>>((end + 63) / 64);
}

bool HintFaultSampler::IsArmed(uint64_t gfn) const {
  if (gfn / 64 >= armed_.size()) return false;
  return armed_[gfn / 64].load(std::memory_order_relaxed) & (1ull << (gfn % 64));
}

void HintFaultSampler::SetArmed(uint64_t gfn) {
  if (gfn / 64 >= armed_.size()) return;
  armed_[gfn / 64].fetch_or(1ull << (gfn % 64), std::memory_order_relaxed);
}

void HintFaultSampler::ClearArmed(uint64_t gfn) {
  if (gfn / 64 >= armed_.size()) return;
  armed_[gfn / 64].fetch_and(~(1ull << (gfn % 64)), std::memory_order_relaxed);
}

uint64_t HintFaultSampler::ArmAlignment() const {
  return ram_.empty() ? 1 : ram_[0].page_bytes / kGuestPageBytes;
}

HintFaultSampler::~HintFaultSampler() { Stop(); }

absl::Status HintFaultSampler::Start() {
  uffd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
  if (uffd_ < 0) return Errno("userfaultfd");
  const bool huge = !ram_.empty() && ram_[0].page_bytes > kGuestPageBytes;
  const bool minor = kind_ == HintFaults::kMinor;
  uffdio_api api{};
  api.api = UFFD_API;
  api.features = UFFD_FEATURE_THREAD_ID;
  if (minor) api.features |= huge ? UFFD_FEATURE_MINOR_HUGETLBFS : UFFD_FEATURE_MINOR_SHMEM;
  if (::ioctl(uffd_, UFFDIO_API, &api) != 0) {
    return Errno(minor ? "UFFDIO_API (minor faults)" : "UFFDIO_API (write-protect faults)");
  }
  const bool evict = kind_ == HintFaults::kEvict;
  for (const GuestRamRegion& r : ram_) {
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(r.host);
    reg.range.len = r.bytes;
    reg.mode = minor ? UFFDIO_REGISTER_MODE_MINOR
                     : UFFDIO_REGISTER_MODE_WP | (evict ? UFFDIO_REGISTER_MODE_MISSING : 0);
    if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) {
      return Errno(absl::StrCat("UFFDIO_REGISTER of guest slot ", r.slot));
    }
    registered_ = true;
    if (!minor && !(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
      return absl::FailedPreconditionError(
          absl::StrCat("--sampler=", name(),
                       ": this kernel cannot write-protect anonymous memory through "
                       "userfaultfd (Linux 5.7 or later; use --sampler=ring)"));
    }
    if (evict && (reg.ioctls & (1ull << _UFFDIO_COPY | 1ull << _UFFDIO_ZEROPAGE)) !=
                     (1ull << _UFFDIO_COPY | 1ull << _UFFDIO_ZEROPAGE)) {
      return absl::FailedPreconditionError(
          "--sampler=evict: this kernel cannot fill anonymous memory through userfaultfd "
          "(UFFDIO_COPY); use --sampler=wp");
    }
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) return Errno("eventfd");
  handler_ = std::thread([this] { HandlerLoop(); });
  // Without a measurement the default round trip stands.
  (void)Calibrate();
  return absl::OkStatus();
}

absl::Status HintFaultSampler::Calibrate() {
  constexpr int kFaults = 33;
  const bool huge = !ram_.empty() && ram_[0].page_bytes > kGuestPageBytes;
  const bool minor = kind_ == HintFaults::kMinor;
  // hugetlb keeps the default: a 2 MiB scratch page is not worth it. A
  // write-protect fault on a transparent huge page takes the path of one
  // on a 4 KiB page (the fault read, the protection lifted, the writer
  // woken), so an anonymous 4 KiB scratch page measures it.
  if (huge && minor) return absl::OkStatus();
  void* map = MAP_FAILED;
  if (minor) {
    int fd = ::memfd_create("numavm-calibrate", MFD_CLOEXEC);
    if (fd < 0) return Errno("memfd_create (fault calibration)");
    if (::ftruncate(fd, kGuestPageBytes) != 0) {
      ::close(fd);
      return Errno("ftruncate (fault calibration)");
    }
    map = ::mmap(nullptr, kGuestPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ::close(fd);
  } else {
    map = ::mmap(nullptr, kGuestPageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                 0);
  }
  if (map == MAP_FAILED) return Errno("mmap (fault calibration)");
  auto* page = static_cast<uint8_t*>(map);
  page[0] = 1;  // in the page cache, or populated
  uffdio_register reg{};
  reg.range.start = reinterpret_cast<uint64_t>(page);
  reg.range.len = kGuestPageBytes;
  reg.mode = minor                         ? UFFDIO_REGISTER_MODE_MINOR
             : kind_ == HintFaults::kEvict ? UFFDIO_REGISTER_MODE_MISSING
                                           : UFFDIO_REGISTER_MODE_WP;
  if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) {
    ::munmap(map, kGuestPageBytes);
    return Errno("UFFDIO_REGISTER (fault calibration)");
  }
  {
    absl::MutexLock lock(&mu_);
    scratch_ = page;
  }
  std::vector<double> micros;
  volatile uint8_t* touch = page;
  for (int i = 0; i < kFaults; ++i) {
    if (!Protect(page, kGuestPageBytes).ok()) break;
    const auto t0 = std::chrono::steady_clock::now();
    if (kind_ != HintFaults::kWriteProtect) {
      const uint8_t read = touch[0];  // a read
      (void)read;
    } else {
      touch[0] = 2;  // only a write faults
    }
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  uffdio_range range{reinterpret_cast<uint64_t>(page), kGuestPageBytes};
  ::ioctl(uffd_, UFFDIO_UNREGISTER, &range);
  {
    absl::MutexLock lock(&mu_);
    scratch_ = nullptr;
  }
  ::munmap(map, kGuestPageBytes);
  if (micros.empty()) return absl::OkStatus();
  std::sort(micros.begin(), micros.end());
  fault_cost_ = absl::Microseconds(micros[micros.size() / 2]);
  return absl::OkStatus();
}

absl::Status HintFaultSampler::Arm(const ScanPlan& plan) {
  uint64_t armed = 0;
  for (const GfnRange& range : plan.probes) {
    const GuestRamRegion* r = RegionOfGfn(ram_, range.first);
    if (r == nullptr) continue;
    const uint64_t offset = range.first - r->first_gfn();
    const uint64_t count = std::min(range.count, r->pages() - offset);
    uint8_t* host = r->host + offset * kGuestPageBytes;
    if ((count <= kMaxRunPages || kind_ == HintFaults::kEvict) &&
        r->page_bytes == kGuestPageBytes) {
      // A probe, or a run of neighbouring probe pages (scan_control.h). A
      // page still armed since an earlier sweep stays as it is. A page not
      // in the page cache (or never touched) is not armed at all: its first
      // touch is a missing fault, which neither kind sees. The rest is
      // armed with one call per stretch of neighbours - one call for the
      // whole run in the usual case.
      // (On the stack but for evict's longer runs.)
      unsigned char on_stack[kMaxRunPages];
      std::vector<unsigned char> on_heap(count > kMaxRunPages ? count : 0);
      unsigned char* resident = on_heap.empty() ? on_stack : on_heap.data();
      if (::mincore(host, count * kGuestPageBytes, resident) != 0) continue;
      uint64_t i = 0;
      while (i < count) {
        const uint64_t start = i;
        while (i < count && !IsArmed(range.first + i) && (resident[i] & 1)) {
          SetArmed(range.first + i);
          ++i;
        }
        if (i > start) {
          const uint64_t pages = i - start;
          absl::Status s = kind_ == HintFaults::kEvict
                               ? Evict(host + start * kGuestPageBytes, range.first + start, pages)
                               : Protect(host + start * kGuestPageBytes, pages * kGuestPageBytes);
          if (!s.ok()) return s;
          // (An eviction that could not read the run left it as it was.)
          if (IsArmed(range.first + start)) armed += pages;
        } else {
          ++i;  // armed already, or not resident
        }
      }
      continue;
    }
    if (kind_ == HintFaults::kWriteProtect) {
      // Marked so that Stop lifts every protection it set.
      for (uint64_t i = 0; i < count; ++i) SetArmed(range.first + i);
    }
    if (absl::Status s = Protect(host, count * kGuestPageBytes); !s.ok()) return s;
    armed += count;
  }
  absl::MutexLock lock(&mu_);
  stats_.pages_armed += armed;
  return absl::OkStatus();
}

absl::Status HintFaultSampler::Protect(uint8_t* start, uint64_t len) {
  // (evict: only the calibration's scratch page comes here, its contents
  // are not kept.)
  if (kind_ != HintFaults::kWriteProtect) {
    // Zaps the mappings only; the memfd keeps the data, so the next access
    // is a minor fault reported to us.
    if (::madvise(start, len, MADV_DONTNEED) != 0) {
      return Errno("madvise(MADV_DONTNEED) of the scan window");
    }
    return absl::OkStatus();
  }
  uffdio_writeprotect wp{};
  wp.range.start = reinterpret_cast<uint64_t>(start);
  wp.range.len = len;
  wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
  if (::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0) {
    return Errno("UFFDIO_WRITEPROTECT of the scan window");
  }
  return absl::OkStatus();
}

void HintFaultSampler::Stop() {
  if (uffd_ < 0) return;
  // Unregistering wakes every thread waiting on a fault; their retry maps the
  // page from the page cache without us.
  if (registered_ && kind_ == HintFaults::kEvict && handler_.joinable()) {
    // Every evicted page back before the memory is let go (after, a touch
    // would find zeros): the handler thread does it, then ends.
    bring_back_.store(true);
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof(one));
    handler_.join();
  }
  if (registered_) {
    // Write-protected probes left as they were would fault on nobody's
    // watch (the kernel resolves them once unregistered, but not every
    // kernel clears the marks).
    if (kind_ == HintFaults::kWriteProtect) UnprotectArmed();
    for (const GuestRamRegion& r : ram_) {
      uffdio_range range{reinterpret_cast<uint64_t>(r.host), r.bytes};
      ::ioctl(uffd_, UFFDIO_UNREGISTER, &range);
    }
    registered_ = false;
  }
  if (handler_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_fd_, &one, sizeof(one));
    handler_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  ::close(uffd_);
  uffd_ = stop_fd_ = -1;
}

SamplerStats HintFaultSampler::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::vector<absl::Duration> HintFaultSampler::TakeServiceTimes() {
  absl::MutexLock lock(&mu_);
  return std::exchange(service_times_, {});
}

}  // namespace numavm
