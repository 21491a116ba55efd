// Building blocks shared by the workloads: regions, slices, work budgets,
// progress.
#ifndef NUMAVM_GUEST_TOOLS_WORKLOADS_COMMON_H_
#define NUMAVM_GUEST_TOOLS_WORKLOADS_COMMON_H_

#include <stdint.h>

#include "runtime/runtime.h"

namespace guest {

inline constexpr uint64_t kPageBytes = 4096;

struct Region {
  uint64_t start = 0;  // guest-physical = virtual
  uint64_t bytes = 0;
  uint64_t* words() const { return reinterpret_cast<uint64_t*>(start); }
  uint64_t word_count() const { return bytes / 8; }
};

// Part `index` of `count` equal, page-aligned parts of `r`.
Region Slice(const Region& r, uint32_t index, uint32_t count);

// The working set: `size=` bytes (default all free memory) from the heap.
Region WorkingSet(const Env& env);

// Bytes between two accesses of a streaming pass (`stride=`, default 64: one
// access per cache line, which moves the whole line on real hardware).
uint64_t Stride();

// Reports cumulative bytes to the VMM every kReportBytes and on Flush.
class ProgressMeter {
 public:
  static constexpr uint64_t kReportBytes = 4ull << 20;
  void Add(uint64_t bytes) {
    total_ += bytes;
    if (total_ - reported_ >= kReportBytes) Flush();
  }
  void Flush() {
    reported_ = total_;
    Progress(total_);
  }
  uint64_t total() const { return total_; }

 private:
  uint64_t total_ = 0;
  uint64_t reported_ = 0;
};

// The guest time `seconds=` (or `default_seconds`) allows; 0 with
// `iterations=` (passes count, not time).
uint64_t SecondsAllowed(uint64_t default_seconds);

// How much work a vCPU does: `iterations=` whole passes, or, with
// `seconds=`, passes until that much guest time has passed (checked after
// every chunk, so a pass can end early). Without either, `default_seconds`.
// A budget of `share` > 1 gets 1/share of the passes or of the time.
class WorkBudget {
 public:
  WorkBudget(const Env& env, uint64_t default_seconds, uint64_t share = 1);
  // True if another pass may start.
  bool StartPass();
  // True if the current pass may go on after a chunk.
  bool ContinuePass() const { return !deadline_.Passed(); }

 private:
  uint64_t iterations_ = 0;  // 0: time-bounded
  uint64_t passes_ = 0;
  Deadline deadline_;
};

// Passes over `r` touching one word every Stride() bytes, in 1 MiB chunks;
// each chunk counts as its bytes of memory traffic. They return early when
// the budget runs out mid-pass.
void WritePass(const Region& r, uint64_t value, ProgressMeter& meter, const WorkBudget& budget);
uint64_t ReadPass(const Region& r, ProgressMeter& meter, const WorkBudget& budget);
// Touches every page of `r` once (the first touch decides placement).
void TouchPages(const Region& r);

// vCPU mask with bits [first, first + count).
inline uint64_t MaskOf(uint32_t first, uint32_t count) {
  uint64_t mask = 0;
  for (uint32_t i = first; i < first + count && i < 64; ++i) mask |= 1ull << i;
  return mask;
}

}  // namespace guest

#endif  // NUMAVM_GUEST_TOOLS_WORKLOADS_COMMON_H_
