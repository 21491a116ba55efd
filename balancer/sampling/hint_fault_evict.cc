// HintFaultSampler's `evict` kind (hint_fault_sampler.h): taking probes of
// anonymous memory away - write-protected, saved with their node, freed -
// and bringing them back on their first access, or all at Stop.
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <numa.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <utility>
#include <vector>

#include "balancer/sampling/hint_fault_sampler.h"
#include "base/errno_status.h"
#include "base/thread_cpu.h"

namespace numavm {

absl::Status HintFaultSampler::Evict(uint8_t* host, uint64_t gfn, uint64_t pages) {
  const uint64_t len = pages * kGuestPageBytes;
  absl::MutexLock lock(&evict_mu_);
  // Each step's CPU time, into stats_.evict once the run is done.
  SamplerStats::EvictSteps spent;
  absl::Duration mark = ThreadCpuTime();
  auto step = [&mark](absl::Duration& into) {
    const absl::Duration now = ThreadCpuTime();
    into += now - mark;
    mark = now;
  };
  struct Charge {
    HintFaultSampler* self;
    SamplerStats::EvictSteps& spent;
    ~Charge() {
      absl::MutexLock lock(&self->mu_);
      self->stats_.evict.protect += spent.protect;
      self->stats_.evict.read += spent.read;
      self->stats_.evict.query += spent.query;
      self->stats_.evict.free += spent.free;
    }
  } charge{this, spent};
  // Writers wait (a write-protect fault, answered once this is over), so
  // what is saved is what the guest last wrote; readers go on until freed.
  uffdio_writeprotect wp{};
  wp.range.start = reinterpret_cast<uint64_t>(host);
  wp.range.len = len;
  wp.mode = UFFDIO_WRITEPROTECT_MODE_WP;
  if (::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp) != 0) {
    for (uint64_t i = 0; i < pages; ++i) ClearArmed(gfn + i);
    return ErrnoStatus(errno, "UFFDIO_WRITEPROTECT of the probes to evict");
  }
  step(spent.protect);
  // Read through the kernel, not by loads, straight into the store's
  // buffers: a run another thread made inaccessible for a moment (a
  // protected move) fails the read instead of this thread, and is left as
  // it is.
  std::vector<std::unique_ptr<uint8_t[]>> saved = evicted_.Buffers(pages);
  std::vector<iovec> local(pages);
  for (uint64_t i = 0; i < pages; ++i) local[i] = iovec{saved[i].get(), kGuestPageBytes};
  int err = 0;
  constexpr uint64_t kMaxIovecs = 1024;  // a call's most (UIO_MAXIOV)
  for (uint64_t done = 0; done < pages && err == 0;) {
    const uint64_t n = std::min(pages - done, kMaxIovecs);
    iovec remote{host + done * kGuestPageBytes, n * kGuestPageBytes};
    const ssize_t got = ::process_vm_readv(::getpid(), local.data() + done, n, &remote, 1, 0);
    if (got != static_cast<ssize_t>(n * kGuestPageBytes)) err = got < 0 ? errno : EFAULT;
    done += n;
  }
  step(spent.read);
  if (err != 0) {
    for (std::unique_ptr<uint8_t[]>& bytes : saved) evicted_.Recycle(std::move(bytes));
    wp.mode = 0;
    ::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp);
    for (uint64_t i = 0; i < pages; ++i) ClearArmed(gfn + i);
    // Not an error of the sampler's: the run is simply not a probe now.
    return err == EFAULT ? absl::OkStatus()
                         : ErrnoStatus(err, "process_vm_readv of the probes to evict");
  }
  std::vector<void*> at(pages);
  std::vector<int> node(pages, -1);
  for (uint64_t i = 0; i < pages; ++i) at[i] = host + i * kGuestPageBytes;
  if (::syscall(SYS_move_pages, 0, pages, at.data(), nullptr, node.data(), 0) != 0) {
    node.assign(pages, -1);
  }
  for (int& n : node) n = std::max(n, -1);  // an error per page (-errno): unknown
  evicted_.PutRun(gfn, saved, node);
  step(spent.query);
  const int freed = ::madvise(host, len, MADV_DONTNEED) == 0 ? 0 : errno;
  step(spent.free);
  if (freed != 0) {
    for (uint64_t i = 0; i < pages; ++i) {
      if (auto page = evicted_.Take(gfn + i)) evicted_.Recycle(std::move(page->bytes));
      ClearArmed(gfn + i);
    }
    wp.mode = 0;  // the pages stay as they were; writers go on
    ::ioctl(uffd_, UFFDIO_WRITEPROTECT, &wp);
    return ErrnoStatus(freed, "madvise(MADV_DONTNEED) of the probes to evict");
  }
  // The protection went with the pages; a writer that faulted meanwhile
  // is woken by the handler and finds the page missing.
  return absl::OkStatus();
}

void HintFaultSampler::AllocateOn(int node) {
  if (node == allocate_on_) return;
  unsigned long mask[16] = {};
  const unsigned long bits = sizeof(unsigned long) * 8;
  long rc;
  if (node < 0 || static_cast<unsigned long>(node) >= sizeof(mask) * 8) {
    rc = ::syscall(SYS_set_mempolicy, MPOL_DEFAULT, nullptr, 0);
    node = -1;
  } else {
    mask[node / bits] = 1ul << (node % bits);
    rc = ::syscall(SYS_set_mempolicy, MPOL_PREFERRED, mask, sizeof(mask) * 8);
  }
  allocate_on_ = rc == 0 ? node : -2;  // unknown after a failure: set again next time
}

int HintFaultSampler::CopyIn(uint64_t dst, const void* src, uint64_t len) {
  for (int again = 0;; ++again) {
    uffdio_copy copy{};
    copy.dst = dst;
    copy.src = reinterpret_cast<uint64_t>(src);
    copy.len = len;
    if (::ioctl(uffd_, UFFDIO_COPY, &copy) == 0) return 0;
    if (errno != EAGAIN || again == 16) return errno;
  }
}

bool HintFaultSampler::BringBack(uint64_t page, uint64_t gfn, bool write, pid_t tid) {
  std::optional<EvictedPages::Page> saved = evicted_.Take(gfn);
  if (!saved) {
    ZeroFill(page, gfn, write, tid);
    return false;
  }
  AllocateOn(saved->node);
  const int err = CopyIn(page, saved->bytes.get(), kGuestPageBytes);
  if (err != 0) {
    // The thread is woken either way (a failed copy does not wake it).
    uffdio_range wake{page, kGuestPageBytes};
    ::ioctl(uffd_, UFFDIO_WAKE, &wake);
  }
  if (err != 0 && err != EEXIST) {
    // The contents stay with us; the thread faults again.
    evicted_.Put(gfn, std::move(saved->bytes), saved->node);
    return false;
  }
  // (EEXIST: a page is there - only this thread fills an evicted one, so
  // it should not be - and the saved copy must not be held for it: a move
  // of the page is then the migrator's again.)
  evicted_.Recycle(std::move(saved->bytes));
  return true;
}

bool HintFaultSampler::MoveHeld(uint64_t gfn, int node) {
  return kind_ == HintFaults::kEvict && evicted_.Retarget(gfn, node);
}

int HintFaultSampler::NodeOfThread(pid_t tid) {
  // Where the thread last ran, read at most every 100 ms per thread: the
  // node a first touch of its would have allocated on.
  const auto now = std::chrono::steady_clock::now();
  ThreadNode& known = thread_nodes_[tid];
  if (known.read.time_since_epoch().count() != 0 &&
      now - known.read < std::chrono::milliseconds(100)) {
    return known.node;
  }
  known.read = now;
  const int cpu = LastCpuOfThread(tid);
  known.node = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
  return known.node;
}

void HintFaultSampler::ZeroFill(uint64_t page, uint64_t gfn, bool write, pid_t tid) {
  // Never evicted: a first touch (or memory freed some other way), which
  // the kernel answers with zeros. A read gets the zero page. A write gets
  // zeroed pages on the writer's node - its own and the untouched ones
  // next to it in its 64 KiB, as the kernel's multi-size huge pages do -
  // without the zero page in between (a write to it would cost a TLB
  // shootdown and a KVM invalidation per page).
  if (write) {
    constexpr uint64_t kChunkPages = 16;
    uint64_t lo = page, hi = page + kGuestPageBytes;
    if (const GuestRamRegion* r = RegionOfGfn(ram_, gfn); r != nullptr) {
      const uint64_t first = std::max(r->first_gfn(), gfn / kChunkPages * kChunkPages);
      const uint64_t end = std::min(r->first_gfn() + r->pages(), first + kChunkPages);
      uint8_t* chunk = r->host + (first - r->first_gfn()) * kGuestPageBytes;
      unsigned char resident[kChunkPages];
      if (::mincore(chunk, (end - first) * kGuestPageBytes, resident) == 0) {
        auto free = [&](uint64_t g) { return !(resident[g - first] & 1) && !IsArmed(g); };
        uint64_t a = gfn, b = gfn + 1;
        while (a > first && free(a - 1)) --a;
        while (b < end && free(b)) ++b;
        lo = page - (gfn - a) * kGuestPageBytes;
        hi = page + (b - gfn) * kGuestPageBytes;
      }
    }
    static const std::vector<uint8_t>* zeros = new std::vector<uint8_t>(16 * kGuestPageBytes);
    AllocateOn(NodeOfThread(tid));
    for (const auto& [from, to] : {std::pair{lo, hi}, std::pair{page, page + kGuestPageBytes}}) {
      if (CopyIn(from, zeros->data(), to - from) == 0) return;
      // A neighbour was filled meanwhile: the page alone.
    }
  } else {
    uffdio_zeropage zero{};
    zero.range.start = page;
    zero.range.len = kGuestPageBytes;
    if (::ioctl(uffd_, UFFDIO_ZEROPAGE, &zero) == 0) return;
  }
  uffdio_range wake{page, kGuestPageBytes};  // EEXIST: filled meanwhile
  ::ioctl(uffd_, UFFDIO_WAKE, &wake);
}

void HintFaultSampler::BringAllBack() {
  absl::MutexLock lock(&evict_mu_);
  for (EvictedPages::Page& page : evicted_.TakeAll()) {
    const GuestRamRegion* r = RegionOfGfn(ram_, page.gfn);
    if (r == nullptr) continue;
    const uint64_t host =
        reinterpret_cast<uint64_t>(r->host) + (page.gfn - r->first_gfn()) * kGuestPageBytes;
    AllocateOn(page.node);
    CopyIn(host, page.bytes.get(), kGuestPageBytes);
    ClearArmed(page.gfn);
  }
  AllocateOn(-1);
}

}  // namespace numavm
