#include "base/move_fence.h"

namespace numavm {

void MoveFence::Raise() {
  mu_.Lock();
  sequence_.fetch_add(1, std::memory_order_acq_rel);
}

void MoveFence::Lower() {
  sequence_.fetch_add(1, std::memory_order_acq_rel);
  mu_.Unlock();
}

bool MoveFence::RetryAfterFault(uint64_t before) {
  // Entered with no window open and none opened since: not a move's doing.
  if (before % 2 == 0 && sequence() == before) return false;
  { absl::ReaderMutexLock wait(&mu_); }
  retries_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace numavm
