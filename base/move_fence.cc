#include "base/move_fence.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace numavm {
namespace {
// A window lasts one batch's moves (milliseconds; ~40 ms in the NUMA lab);
// a wait this long says something is stuck: said once per process, on
// stderr, with the fence's state.
constexpr auto kLongWait = std::chrono::seconds(5);
// The shortest quiet gap between two windows: far longer than a nested
// page fault takes to be handled, even in the lab's emulated machine.
constexpr std::chrono::steady_clock::duration kMinQuietGap = std::chrono::milliseconds(1);
std::atomic<bool> g_said_long_wait{false};
}  // namespace

void MoveFence::WaitLocked(std::unique_lock<std::mutex>& lock, const char* who,
                           const std::function<bool()>& ready) {
  if (changed_.wait_for(lock, kLongWait, ready)) return;
  if (!g_said_long_wait.exchange(true)) {
    std::fprintf(stderr,
                 "numavm: %s waited over 5 s for a page move's window (raised %d, %d host "
                 "accesses, sequence %llu); still waiting\n",
                 who, raised_ ? 1 : 0, accesses_, static_cast<unsigned long long>(sequence()));
  }
  changed_.wait(lock, ready);
}

std::chrono::steady_clock::duration MoveFence::QuietGap(
    std::chrono::steady_clock::duration window) {
  return std::max<std::chrono::steady_clock::duration>(kMinQuietGap, window / 4);
}

std::chrono::steady_clock::duration MoveFence::gap_waited() const {
  std::lock_guard<std::mutex> lock(mu_);
  return gap_waited_;
}

void MoveFence::Raise() {
  std::unique_lock<std::mutex> lock(mu_);
  // Nobody is held back while this waits (the fence is down): for host
  // accesses to end and for another raiser's window (a page mover, the
  // PROT_NONE sampler arming: one at a time), then for the quiet gap
  // after the last window - and again if either came back meanwhile.
  for (;;) {
    WaitLocked(lock, "a page mover", [this] { return !raised_ && accesses_ == 0; });
    const auto now = std::chrono::steady_clock::now();
    if (now >= quiet_until_) break;
    gap_waited_ += quiet_until_ - now;
    const auto until = quiet_until_;
    lock.unlock();
    std::this_thread::sleep_until(until);
    lock.lock();
  }
  raised_ = true;
  raised_at_ = std::chrono::steady_clock::now();
  sequence_.fetch_add(1, std::memory_order_acq_rel);
}

void MoveFence::Lower() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    raised_ = false;
    const auto now = std::chrono::steady_clock::now();
    quiet_until_ = now + QuietGap(now - raised_at_);
    sequence_.fetch_add(1, std::memory_order_acq_rel);
  }
  changed_.notify_all();
}

void MoveFence::GivenBack() {
  std::lock_guard<std::mutex> lock(mu_);
  sequence_.fetch_add(2, std::memory_order_acq_rel);
}

bool MoveFence::RetryAfterFault(uint64_t before) {
  std::unique_lock<std::mutex> lock(mu_);
  WaitLocked(lock, "a vCPU", [this] { return !raised_; });
  if (before % 2 == 1 || sequence() != before) {
    retries_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // No window since the vCPU entered: a run left inaccessible (a give-back
  // that failed) would fault for ever; give everything back, once per
  // window since the last time.
  if (!repair_ || repaired_at_ == sequence()) return false;
  repaired_at_ = sequence();
  repair_();
  repairs_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

MoveFence::Access::Access(MoveFence* fence) : fence_(fence) {
  if (fence_ == nullptr) return;
  std::unique_lock<std::mutex> lock(fence_->mu_);
  fence_->WaitLocked(lock, "the VMM", [this] { return !fence_->raised_; });
  ++fence_->accesses_;
}

MoveFence::Access::~Access() {
  if (fence_ == nullptr) return;
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(fence_->mu_);
    last = --fence_->accesses_ == 0;
  }
  if (last) fence_->changed_.notify_all();
}

}  // namespace numavm
