#include "balancer/sampling/hint_fault_sampler.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
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

constexpr size_t kMessagesPerRead = 64;

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
  for (const GuestRamRegion& r : ram_) {
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(r.host);
    reg.range.len = r.bytes;
    reg.mode = minor ? UFFDIO_REGISTER_MODE_MINOR : UFFDIO_REGISTER_MODE_WP;
    if (::ioctl(uffd_, UFFDIO_REGISTER, &reg) != 0) {
      return Errno(absl::StrCat("UFFDIO_REGISTER of guest slot ", r.slot));
    }
    registered_ = true;
    if (!minor && !(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT))) {
      return absl::FailedPreconditionError(
          "--sampler=wp: this kernel cannot write-protect anonymous memory through "
          "userfaultfd (Linux 5.7 or later; use --sampler=ring)");
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
  if (huge) return absl::OkStatus();  // keep the default: a 2 MiB scratch page is not worth it
  const bool minor = kind_ == HintFaults::kMinor;
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
  reg.mode = minor ? UFFDIO_REGISTER_MODE_MINOR : UFFDIO_REGISTER_MODE_WP;
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
    if (kind_ == HintFaults::kMinor) {
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
    if (count <= kMaxRunPages && r->page_bytes == kGuestPageBytes) {
      // A probe, or a run of neighbouring probe pages (scan_control.h). A
      // page still armed since an earlier sweep stays as it is. A page not
      // in the page cache (or never touched) is not armed at all: its first
      // touch is a missing fault, which neither kind sees. The rest is
      // armed with one call per stretch of neighbours - one call for the
      // whole run in the usual case.
      unsigned char resident[kMaxRunPages];
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
          if (absl::Status s = Protect(host + start * kGuestPageBytes, pages * kGuestPageBytes);
              !s.ok()) {
            return s;
          }
          armed += pages;
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
  if (kind_ == HintFaults::kMinor) {
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

void HintFaultSampler::Resolve(uint64_t start, uint64_t len) {
  if (kind_ == HintFaults::kMinor) {
    uffdio_continue cont{};
    cont.range.start = start;
    cont.range.len = len;
    if (::ioctl(uffd_, UFFDIO_CONTINUE, &cont) == 0) return;
  } else {
    uffdio_writeprotect wp{};
    wp.range.start = start;
    wp.range.len = len;
    wp.mode = 0;  // lift the protection and wake the writer
    if (::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) == 0) return;
  }
  // EEXIST (someone mapped it first) or a mapping change (EAGAIN): either
  // way the faulting thread must be woken to retry; a resolution that fails
  // does not wake it.
  uffdio_range wake{start, len};
  ::ioctl(uffd_, UFFDIO_WAKE, &wake);
}

void HintFaultSampler::UnprotectArmed() {
  for (const GuestRamRegion& r : ram_) {
    uint64_t run = 0, run_pages = 0;  // the current run of armed pages
    auto flush = [&] {
      if (run_pages == 0) return;
      uffdio_writeprotect wp{};
      wp.range.start = reinterpret_cast<uint64_t>(r.host) + run * kGuestPageBytes;
      wp.range.len = run_pages * kGuestPageBytes;
      wp.mode = 0;
      ::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp);
      run_pages = 0;
    };
    for (uint64_t p = 0; p < r.pages(); ++p) {
      const uint64_t gfn = r.first_gfn() + p;
      if (gfn % 64 == 0 && gfn / 64 < armed_.size() && p + 64 <= r.pages() &&
          armed_[gfn / 64].load(std::memory_order_relaxed) == 0) {
        flush();
        p += 63;  // a word with nothing armed
        continue;
      }
      if (!IsArmed(gfn)) {
        flush();
        continue;
      }
      if (run_pages == 0) run = p;
      ++run_pages;
    }
    flush();
  }
}

void HintFaultSampler::Continue(uint64_t start, uint64_t len) {
  int again = 0;
  while (len > 0) {
    uffdio_continue cont{};
    cont.range.start = start;
    cont.range.len = len;
    if (::ioctl(uffd_, UFFDIO_CONTINUE, &cont) == 0) return;
    const uint64_t done = cont.mapped > 0 ? static_cast<uint64_t>(cont.mapped) : 0;
    if (errno == EEXIST) {
      // A vCPU faulted that page back meanwhile: past it.
      const uint64_t skip = std::min(len, done + kGuestPageBytes);
      start += skip;
      len -= skip;
    } else if (errno == EAGAIN && ++again < 4) {
      start += done;
      len -= std::min(len, done);
    } else {
      return;  // the rest faults back through the handler as usual
    }
  }
}

void HintFaultSampler::Remap(uint8_t* host, uint64_t bytes) {
  // A move keeps an anonymous page's mapping (and its protection).
  if (uffd_ < 0 || !registered_ || kind_ == HintFaults::kWriteProtect) return;
  const uint64_t lo = reinterpret_cast<uint64_t>(host), hi = lo + bytes;
  for (const GuestRamRegion& r : ram_) {
    if (r.page_bytes != kGuestPageBytes) continue;
    const uint64_t base = reinterpret_cast<uint64_t>(r.host);
    const uint64_t first = std::max(lo, base), end = std::min(hi, base + r.bytes);
    uint64_t run = first;  // start of the pages not armed
    for (uint64_t a = first; a < end; a += kGuestPageBytes) {
      if (!IsArmed(r.first_gfn() + (a - base) / kGuestPageBytes)) continue;
      if (a > run) Continue(run, a - run);
      run = a + kGuestPageBytes;
    }
    if (end > run) Continue(run, end - run);
  }
}

absl::Status HintFaultSampler::Collect(AccessBatch& out) {
  // Liveness guarantee: wake any thread still waiting on a fault (one whose
  // message was lost or raced). It retries, and faults again if the page is
  // still unmapped, so nothing is lost and no vCPU waits past one period.
  for (const GuestRamRegion& r : ram_) {
    uffdio_range all{reinterpret_cast<uint64_t>(r.host), r.bytes};
    ::ioctl(uffd_, UFFDIO_WAKE, &all);
  }
  {
    absl::MutexLock lock(&mu_);
    out.insert(out.end(), pending_.begin(), pending_.end());
    pending_.clear();
    ++stats_.windows;
  }
  return absl::OkStatus();
}

void HintFaultSampler::HandleFault(uint64_t address, uint64_t flags, pid_t tid) {
  const auto begin = std::chrono::steady_clock::now();
  const GuestRamRegion* region = nullptr;
  for (const GuestRamRegion& r : ram_) {
    uint64_t base = reinterpret_cast<uint64_t>(r.host);
    if (address >= base && address - base < r.bytes) region = &r;
  }
  uint8_t* scratch;
  {
    absl::MutexLock lock(&mu_);
    scratch = scratch_;
  }
  if (region == nullptr && scratch != nullptr &&
      address - reinterpret_cast<uint64_t>(scratch) < kGuestPageBytes) {
    Resolve(reinterpret_cast<uint64_t>(scratch), kGuestPageBytes);
    return;
  }
  if (region == nullptr) {
    // Not ours to map; let the thread retry rather than wait forever.
    uffdio_range wake{address & ~(kGuestPageBytes - 1), kGuestPageBytes};
    ::ioctl(uffd_, UFFDIO_WAKE, &wake);
    return;
  }
  const uint64_t base = reinterpret_cast<uint64_t>(region->host);
  const uint64_t page_start = (address - base) / region->page_bytes * region->page_bytes;
  Resolve(base + page_start, region->page_bytes);
  AccessSample s;
  s.gfn = (region->gpa + page_start) / kGuestPageBytes;
  ClearArmed(s.gfn);
  s.vcpu = vcpu_of_thread_ ? vcpu_of_thread_(tid) : kUnknownVcpu;
  FaultOwner inferred;
  if (s.vcpu < 0 && blocked_vcpu_) {
    inferred = blocked_vcpu_(s.gfn);
    s.vcpu = inferred.vcpu;
  }
  s.kind = (flags & UFFD_PAGEFAULT_FLAG_WRITE) ? AccessKind::kWrite : AccessKind::kRead;
  s.at = clock_();
  absl::MutexLock lock(&mu_);
  pending_.push_back(s);
  ++stats_.samples;
  if (s.kind == AccessKind::kWrite)
    ++stats_.writes;
  else
    ++stats_.reads;
  if (s.vcpu >= 0 && s.vcpu < static_cast<int>(stats_.per_vcpu.size())) {
    ++stats_.per_vcpu[s.vcpu];
    if (inferred.vcpu >= 0) ++(inferred.by_cell ? stats_.by_cell : stats_.inferred);
  } else {
    ++stats_.unattributed;
  }
  if (service_times_.size() < (1u << 20)) {
    service_times_.push_back(absl::FromChrono(std::chrono::steady_clock::now() - begin));
  }
}

void HintFaultSampler::HandlerLoop() {
  uffd_msg messages[kMessagesPerRead];
  for (;;) {
    pollfd fds[2] = {{uffd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    ssize_t n = ::read(uffd_, messages, sizeof(messages));
    if (n <= 0) continue;  // EAGAIN: another wake-up took it
    for (size_t i = 0; i < static_cast<size_t>(n) / sizeof(uffd_msg); ++i) {
      if (messages[i].event != UFFD_EVENT_PAGEFAULT) continue;
      HandleFault(messages[i].arg.pagefault.address, messages[i].arg.pagefault.flags,
                  static_cast<pid_t>(messages[i].arg.pagefault.feat.ptid));
    }
    absl::Duration cpu = ThreadCpuTime();
    absl::MutexLock lock(&mu_);
    stats_.helper_cpu_time = cpu;
  }
}

void HintFaultSampler::Stop() {
  if (uffd_ < 0) return;
  // Unregistering wakes every thread waiting on a fault; their retry maps the
  // page from the page cache without us.
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
