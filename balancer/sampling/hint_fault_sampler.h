// Hinting faults, the analogue of the kernel's NUMA hinting faults, in two
// kinds:
//  - minor (`hint`, memfd or hugetlbfs memory): each period the scanner zaps
//    the page-table entries of the probes with MADV_DONTNEED; the next access
//    to each page is a userfaultfd minor fault that names the page, the
//    faulting thread (hence the vCPU) and whether it was a write;
//    UFFDIO_CONTINUE maps the page back. Guest data never changes: the page
//    cache keeps it.
//  - write-protect (`wp`, anonymous memory, which has no page cache to map
//    back from): the probes are write-protected with UFFDIO_WRITEPROTECT; the
//    next write to each is a userfaultfd write-protect fault, with its thread,
//    and the handler lifts the protection. Reads are not seen. Unlike the
//    dirty ring, only the probes fault, so the cost follows the scan rate
//    and the stall budget (policy/scan_rate.h) bounds it.
//  - evict (`evict`, anonymous memory, reads too): each probe is
//    write-protected for a moment, its contents and node saved
//    (evicted_pages.h) and the page freed (MADV_DONTNEED); the next access
//    is a userfaultfd missing fault that names the page, the thread and
//    whether it was a write, and UFFDIO_COPY puts the saved contents back
//    on the node the page was on - the way QEMU's post-copy migration
//    brings pages in. Stop puts every page still evicted back before it
//    lets go of the memory. A first touch of memory never touched is a
//    missing fault too, and not a sample: a read gets the zero page, a
//    write zeroed pages (up to 64 KiB of untouched neighbours) on the
//    writer's node, as the kernel's first touch would.
// KVM reaches the guest's memory through the same page tables, so a vCPU's
// access faults on its own thread either way. Arming is in
// hint_fault_sampler.cc, the fault side (the handler thread) in
// hint_fault_service.cc.
#ifndef NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/blocked_vcpu.h"
#include "balancer/sampling/evicted_pages.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

enum class HintFaults {
  kMinor,         // memfd or hugetlbfs: reads and writes
  kWriteProtect,  // anonymous memory: writes
  kEvict,         // anonymous memory (4 KiB pages): reads and writes
};

class HintFaultSampler final : public AccessSampler {
 public:
  using VcpuOfThread = std::function<int(pid_t tid)>;  // -1 if not a vCPU
  using Clock = std::function<absl::Duration()>;
  // Who a fault on guest page `gfn` from a thread that is not a vCPU
  // belongs to (blocked_vcpu.h: KVM's async page faults).
  using BlockedVcpu = std::function<FaultOwner(uint64_t gfn)>;

  // Minor faults need shared file memory (memfd or hugetlbfs), write-protect
  // faults anonymous memory.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<HintFaultSampler>> Create(
      std::vector<GuestRamRegion> ram, int vcpus, VcpuOfThread vcpu_of_thread, Clock clock,
      HintFaults kind = HintFaults::kMinor);
  ~HintFaultSampler() override;

  absl::string_view name() const override {
    return kind_ == HintFaults::kMinor ? "hint" : kind_ == HintFaults::kEvict ? "evict" : "wp";
  }
  std::vector<GfnRange> Coverage() const override { return GfnRanges(ram_); }
  uint64_t ArmAlignment() const override;
  absl::Status Start() override;
  absl::Status Collect(AccessBatch& out) override;
  absl::Status Arm(const ScanPlan& plan) override;
  bool Resident(const GfnRange& region) const override { return AnyResident(ram_, region); }
  // The round trip measured at Start (a few faults on a scratch page).
  absl::Duration FaultCost() const override { return fault_cost_; }
  void Stop() override;
  SamplerStats stats() const override;

  // Maps the pages of [host, host + bytes) back that are not armed probes,
  // after a move dropped their mappings (actuation/unmapped_moves.h): the
  // guest then takes no userfault for them. 2 MiB pages are left to fault
  // (one fault a huge page, and a huge probe keeps its place). Call from the
  // thread that arms.
  void Remap(uint8_t* host, uint64_t bytes) override;
  // evict: an evicted probe comes back on `node` (a host node id).
  bool MoveHeld(uint64_t gfn, int node) override;

  // Fault round trips measured by the handler (fault read to CONTINUE done).
  std::vector<absl::Duration> TakeServiceTimes();

  // Before Start: who a fault from a non-vCPU thread is given to.
  void set_blocked_vcpu(BlockedVcpu blocked_vcpu) { blocked_vcpu_ = std::move(blocked_vcpu); }

 private:
  HintFaultSampler(std::vector<GuestRamRegion> ram, int vcpus, VcpuOfThread vcpu_of_thread,
                   Clock clock, HintFaults kind);
  void HandlerLoop();
  void HandleFault(uint64_t address, uint64_t flags, pid_t tid);
  // Times faults on a scratch page (memfd or anonymous, as the guest's)
  // through the same path.
  absl::Status Calibrate();
  // Makes the next access (minor) or write (write-protect) to
  // [start, start + len) fault to us.
  absl::Status Protect(uint8_t* start, uint64_t len);
  // Resolves a fault on [start, start + len) and wakes its thread.
  void Resolve(uint64_t start, uint64_t len);
  // UFFDIO_CONTINUE of [start, start + len), past pages mapped already.
  void Continue(uint64_t start, uint64_t len);
  // Lifts the write protection of every probe still armed (write-protect).
  void UnprotectArmed();
  // evict: saves and frees the resident pages [host, host + pages) of guest
  // pages from `gfn` on.
  absl::Status Evict(uint8_t* host, uint64_t gfn, uint64_t pages);
  // evict: answers a missing fault at `page` (the page's host address) with
  // its saved contents on its node, or with the zero page if it was not
  // evicted; true if it had been.
  bool BringBack(uint64_t page, uint64_t gfn, bool write, pid_t tid);
  // evict: answers a missing fault at a page never evicted with zeros.
  void ZeroFill(uint64_t page, uint64_t gfn, bool write, pid_t tid);
  // evict: the host node thread `tid` last ran on (-1: unknown).
  int NodeOfThread(pid_t tid);
  // evict: puts every evicted page back (Stop), on the handler thread.
  void BringAllBack();
  // The node the handler thread's UFFDIO_COPY allocates on (-1: its own).
  void AllocateOn(int node);
  // UFFDIO_COPY of `len` bytes from `src` to `dst` on the handler thread's
  // node (AllocateOn), again while the mapping changes (EAGAIN); 0 or the
  // errno it failed with.
  int CopyIn(uint64_t dst, const void* src, uint64_t len);

  const std::vector<GuestRamRegion> ram_;
  const HintFaults kind_;
  const VcpuOfThread vcpu_of_thread_;
  const Clock clock_;
  BlockedVcpu blocked_vcpu_;
  int uffd_ = -1;
  int stop_fd_ = -1;
  std::thread handler_;
  bool registered_ = false;
  // The longest run of probe pages armed page by page (with its own
  // bookkeeping); longer ranges (windows, huge pages) are armed whole.
  static constexpr uint64_t kMaxRunPages = ScanControl::kMaxRunPages;
  // Pages zapped and not faulted since (bit per guest page, by gfn): a probe
  // still armed is not zapped again - a zap costs the guest too (KVM drops
  // its mapping), and idle memory would pay it every sweep.
  bool IsArmed(uint64_t gfn) const;
  void SetArmed(uint64_t gfn);
  void ClearArmed(uint64_t gfn);
  std::vector<std::atomic<uint64_t>> armed_;
  // The calibration's scratch mapping (mapped back by the handler, never
  // reported).
  uint8_t* scratch_ = nullptr;
  absl::Duration fault_cost_ = absl::Microseconds(55);
  // evict: the saved probes; a page's eviction (protect, save, free) holds
  // evict_mu_, so that a write that faults meanwhile waits for it to end.
  EvictedPages evicted_;
  absl::Mutex evict_mu_;
  int allocate_on_ = -1;  // handler thread only
  struct ThreadNode {
    std::chrono::steady_clock::time_point read;
    int node = -1;
  };
  absl::flat_hash_map<pid_t, ThreadNode> thread_nodes_;  // handler thread only
  std::atomic<bool> bring_back_{false};

  mutable absl::Mutex mu_;
  AccessBatch pending_ ABSL_GUARDED_BY(mu_);
  SamplerStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> service_times_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_HINT_FAULT_SAMPLER_H_
