// HintFaultSampler's fault side, on its handler thread: reading the
// userfaultfd's messages, resolving each fault (the page mapped again or
// write-enabled, the thread woken) and recording it as a sample; and the
// ways pages are put back without a fault (Stop, and pages moved).
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

#include "balancer/sampling/hint_fault_sampler.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

constexpr size_t kMessagesPerRead = 64;

}  // namespace

void HintFaultSampler::Resolve(uint64_t start, uint64_t len) {
  if (kind_ == HintFaults::kEvict) {
    // (evict: the calibration's scratch page, its contents not kept.)
    uffdio_zeropage zero{};
    zero.range.start = start;
    zero.range.len = len;
    if (::ioctl(uffd_, UFFDIO_ZEROPAGE, &zero) == 0) return;
  } else if (kind_ == HintFaults::kMinor) {
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
  if (uffd_ < 0 || !registered_ || kind_ != HintFaults::kMinor) return;
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
  AccessSample s;
  s.gfn = (region->gpa + page_start) / kGuestPageBytes;
  if (kind_ != HintFaults::kEvict) {
    Resolve(base + page_start, region->page_bytes);
  } else if (flags & UFFD_PAGEFAULT_FLAG_WP) {
    // A write that met an eviction: once it is over the page is gone, and
    // lifting the protection wakes the writer to fault for it (the sample).
    { absl::MutexLock wait(&evict_mu_); }
    uffdio_writeprotect wp{};
    wp.range.start = base + page_start;
    wp.range.len = kGuestPageBytes;
    wp.mode = 0;
    if (::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0) {
      uffdio_range wake{base + page_start, kGuestPageBytes};
      ::ioctl(uffd_, UFFDIO_WAKE, &wake);
    }
    return;
  } else if (!BringBack(base + page_start, s.gfn, flags & UFFD_PAGEFAULT_FLAG_WRITE, tid)) {
    return;  // not a probe: a first touch
  }
  for (uint64_t i = 0; i < region->page_bytes / kGuestPageBytes; ++i) ClearArmed(s.gfn + i);
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
    if (fds[1].revents != 0) {
      if (bring_back_.load()) BringAllBack();
      return;
    }
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

}  // namespace numavm
