#include "workloads/common.h"

namespace guest {
namespace {

constexpr uint64_t kChunkBytes = 1ull << 20;

uint64_t StartDeadlineSeconds(uint64_t default_seconds) {
  if (ArgU64("iterations", 0) != 0) return 0;
  return ArgU64("seconds", default_seconds);
}

}  // namespace

uint64_t SecondsAllowed(uint64_t default_seconds) { return StartDeadlineSeconds(default_seconds); }

Region Slice(const Region& r, uint32_t index, uint32_t count) {
  uint64_t pages = r.bytes / kPageBytes;
  uint64_t first = pages * index / count;
  uint64_t last = pages * (index + 1) / count;
  return Region{r.start + first * kPageBytes, (last - first) * kPageBytes};
}

Region WorkingSet(const Env& env) {
  uint64_t available = env.heap_end - env.heap_start;
  uint64_t bytes = ArgU64("size", available);
  if (bytes > available) bytes = available;
  bytes &= ~(kPageBytes - 1);
  return Region{env.heap_start, bytes};
}

uint64_t Stride() {
  uint64_t stride = ArgU64("stride", 64);
  if (stride < 8) stride = 8;
  if (stride > kPageBytes) stride = kPageBytes;
  return stride & ~7ull;
}

WorkBudget::WorkBudget(const Env& env, uint64_t default_seconds, uint64_t share)
    : iterations_((ArgU64("iterations", 0) + share - 1) / share),
      deadline_(env, (StartDeadlineSeconds(default_seconds) + share - 1) / share) {}

bool WorkBudget::StartPass() {
  ++passes_;
  if (iterations_ != 0) return passes_ <= iterations_;
  return !deadline_.Passed();
}

void WritePass(const Region& r, uint64_t value, ProgressMeter& meter, const WorkBudget& budget) {
  uint64_t* words = r.words();
  const uint64_t step = Stride() / 8;
  for (uint64_t base = 0; base < r.bytes; base += kChunkBytes) {
    uint64_t end = base + kChunkBytes < r.bytes ? base + kChunkBytes : r.bytes;
    for (uint64_t i = base / 8; i < end / 8; i += step) words[i] = value ^ i;
    meter.Add(end - base);
    if (!budget.ContinuePass()) return;
  }
}

uint64_t ReadPass(const Region& r, ProgressMeter& meter, const WorkBudget& budget) {
  const uint64_t* words = r.words();
  const uint64_t step = Stride() / 8;
  uint64_t sum = 0;
  for (uint64_t base = 0; base < r.bytes; base += kChunkBytes) {
    uint64_t end = base + kChunkBytes < r.bytes ? base + kChunkBytes : r.bytes;
    for (uint64_t i = base / 8; i < end / 8; i += step) sum += words[i];
    meter.Add(end - base);
    if (!budget.ContinuePass()) break;
  }
  return sum;
}

void TouchPages(const Region& r) {
  volatile uint64_t* words = r.words();
  for (uint64_t off = 0; off < r.bytes; off += kPageBytes) words[off / 8] = 0;
}

}  // namespace guest
