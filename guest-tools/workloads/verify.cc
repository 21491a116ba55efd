// verify: each vCPU fills its slice with a known pattern (a function of the
// address and the generation), re-checks it, and repeats with the next
// generation. Every mismatch is reported; the result "mismatches" counts them.
#include "workloads/common.h"

namespace {

constexpr uint64_t kMaxPrinted = 16;
guest::Barrier g_start;

uint64_t Pattern(uint64_t address, uint64_t generation) {
  uint64_t x = address * 0x9e3779b97f4a7c15ull + generation;
  x ^= x >> 29;
  return x * 0xbf58476d1ce4e5b9ull;
}

}  // namespace

int WorkloadMain(const guest::Env& env) {
  const guest::Region all = guest::WorkingSet(env);
  const guest::Region mine = guest::Slice(all, env.vcpu, env.vcpus);
  if (env.vcpu == 0) {
    for (uint32_t v = 0; v < env.vcpus; ++v) {
      guest::Region r = guest::Slice(all, v, env.vcpus);
      guest::Layout(r.start, r.bytes, guest::MaskOf(v, 1));
    }
    guest::Phase("run");
  }
  g_start.Wait(env.vcpus);

  // Every word is written and checked (no stride): integrity is the point.
  // With seconds= the deadline is looked at every chunk, so a pass that
  // would outlast it ends early: the words written so far are checked, and
  // the check itself stops at the deadline too.
  constexpr uint64_t kChunkWords = 1 << 15;  // 256 KiB
  volatile uint64_t* words = mine.words();
  const uint64_t n = mine.word_count();
  guest::ProgressMeter meter;
  guest::WorkBudget budget(env, 10);
  uint64_t mismatches = 0;
  uint64_t generation = 0;
  while (budget.StartPass()) {
    ++generation;
    uint64_t written = 0;
    while (written < n) {
      const uint64_t end = written + kChunkWords < n ? written + kChunkWords : n;
      for (uint64_t i = written; i < end; ++i) {
        words[i] = Pattern(mine.start + i * 8, generation);
      }
      meter.Add((end - written) * 8);
      written = end;
      if (!budget.ContinuePass()) break;
    }
    for (uint64_t checked = 0; checked < written;) {
      const uint64_t end = checked + kChunkWords < written ? checked + kChunkWords : written;
      for (uint64_t i = checked; i < end; ++i) {
        uint64_t expected = Pattern(mine.start + i * 8, generation);
        uint64_t found = words[i];
        if (found == expected) continue;
        if (mismatches++ < kMaxPrinted) {
          guest::Printf("verify: vcpu %u gpa 0x%lx expected 0x%lx found 0x%lx\n", env.vcpu,
                        mine.start + i * 8, expected, found);
        }
      }
      meter.Add((end - checked) * 8);
      checked = end;
      if (!budget.ContinuePass()) break;
    }
  }
  meter.Flush();
  guest::Result("generations", generation);
  guest::Result("mismatches", mismatches);
  return mismatches == 0 ? 0 : 1;
}
