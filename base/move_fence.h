// Guest memory made inaccessible for a moment while its pages move, and the
// threads that must not touch it meanwhile.
//
// The kernel's NUMA balancing migrates pages whose PROT_NONE entries need no
// TLB flush; move_pages(2) of a page a vCPU may have cached costs a TLB
// shootdown of every CPU running a vCPU thread, per page. A mover in the
// VMM's own process can do as the kernel does: take a run of guest memory
// away (mprotect PROT_NONE: one flush, one KVM invalidation for the run),
// move its pages, give it back (actuation/protected_moves.h). Meanwhile:
//   - a vCPU that touches the run leaves KVM_RUN with EFAULT; its thread
//     asks `RetryAfterFault` whether a move window was open since it
//     entered the guest, and if so waits for the window to close and
//     enters again (the faulting access is retried, nothing is lost);
//   - host code that reads or writes guest memory (the guest channel's
//     mailboxes) holds an `Access`, which a window waits for.
// One raiser at a time: a second waits for the first's window and gap. A plain mutex and condition
// variable, not a reader-writer lock: a mover that waits to raise the
// fence never holds back a vCPU, only a raised fence does.
//
// Between two windows the guest gets a quiet gap (QuietGap: a quarter of
// the window before, at least 1 ms). KVM retries a nested page fault
// whenever any MMU-notifier invalidation of the VM completed while it was
// being handled, and a window invalidates once for each page it moves: a
// mover that opened window after window would starve a vCPU whose fault
// takes longer than the time between two invalidations (the NUMA lab's
// churn runs stalled that way). The gap lets every pending fault finish.
#ifndef NUMAVM_BASE_MOVE_FENCE_H_
#define NUMAVM_BASE_MOVE_FENCE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

namespace numavm {

class MoveFence final {
 public:
  MoveFence() = default;
  MoveFence(const MoveFence&) = delete;
  MoveFence& operator=(const MoveFence&) = delete;

  // The mover, around the moment its runs are inaccessible: Raise waits
  // for every Access to end and for the quiet gap after the last window,
  // Lower lets vCPUs and host code back in.
  void Raise();
  void Lower();
  // The guest's time between a window that lasted `window` and the next.
  static std::chrono::steady_clock::duration QuietGap(std::chrono::steady_clock::duration window);
  // Total time movers waited in Raise for quiet gaps.
  std::chrono::steady_clock::duration gap_waited() const;

  // What a vCPU thread reads before it enters the guest.
  uint64_t sequence() const { return sequence_.load(std::memory_order_acquire); }
  // After KVM_RUN failed with EFAULT: true when the vCPU should enter
  // again - a window was open at, or opened since, `before` (sequence()'s
  // value then) and has closed now, or no window explains the fault and
  // `repair` (set_repair) gave all guest memory its protection back, once
  // for each window since the last repair (a run a failed mover left
  // inaccessible must not stop the VM). False: no move explains it.
  bool RetryAfterFault(uint64_t before);
  // Guest memory given its protection back outside any window (a probe of
  // the PROT_NONE sampler, balancer/sampling/prot_none_sampler.h): a vCPU
  // that faulted on it before enters again, as after a window.
  void GivenBack();
  // Gives every byte of guest memory its usual protection; runs with no
  // window open.
  void set_repair(std::function<void()> repair) { repair_ = std::move(repair); }
  // A vCPU's access to guest memory that a window had taken away, done
  // for it by the VMM once the window closed (KVM emulated the instruction
  // and handed the access over as MMIO).
  void Waited() { retries_.fetch_add(1, std::memory_order_relaxed); }
  // vCPU entries that RetryAfterFault let through, and Waited accesses.
  uint64_t retries() const { return retries_.load(std::memory_order_relaxed); }
  uint64_t repairs() const { return repairs_.load(std::memory_order_relaxed); }

  // Host access to guest memory, for its scope (`fence` may be null).
  class Access {
   public:
    explicit Access(MoveFence* fence);
    ~Access();
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

   private:
    MoveFence* const fence_;
  };

 private:
  // Waits on `changed_` until `ready`; a wait over a few seconds is said on
  // stderr (once per process).
  void WaitLocked(std::unique_lock<std::mutex>& lock, const char* who,
                  const std::function<bool()>& ready);

  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool raised_ = false;                // guarded by mu_
  int accesses_ = 0;                   // guarded by mu_
  uint64_t repaired_at_ = UINT64_MAX;  // sequence() at the last repair; guarded by mu_
  // When the open window was raised, and when the next may be; guarded by mu_.
  std::chrono::steady_clock::time_point raised_at_{}, quiet_until_{};
  std::chrono::steady_clock::duration gap_waited_{};  // guarded by mu_
  std::function<void()> repair_;
  // Odd while a window is open; every Raise and Lower adds one, every
  // GivenBack two.
  std::atomic<uint64_t> sequence_{0};
  std::atomic<uint64_t> retries_{0}, repairs_{0};
};

}  // namespace numavm

#endif  // NUMAVM_BASE_MOVE_FENCE_H_
