// numa02_chase: numa02's layout, but each vCPU follows a dependent chain of
// loads through its slice (a random cycle over its cache lines), so every
// access waits for memory and nothing is written after setup.
#include "workloads/common.h"

namespace {

constexpr uint64_t kLineWords = 8;  // 64-byte cache lines
constexpr uint64_t kHopsPerCheck = 4096;
guest::Barrier g_start;

uint64_t NextRandom(uint64_t& state) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

// Sattolo's algorithm: a single cycle through all lines of `r`.
void BuildCycle(const guest::Region& r, uint64_t seed) {
  uint64_t* words = r.words();
  uint64_t lines = r.bytes / 64;
  for (uint64_t i = 0; i < lines; ++i) words[i * kLineWords] = i;
  uint64_t state = seed | 1;
  for (uint64_t i = lines - 1; i > 0; --i) {
    uint64_t j = NextRandom(state) % i;
    uint64_t t = words[i * kLineWords];
    words[i * kLineWords] = words[j * kLineWords];
    words[j * kLineWords] = t;
  }
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
    guest::Phase("first-touch");
    for (uint32_t v = 0; v < env.vcpus; ++v) {
      BuildCycle(guest::Slice(all, v, env.vcpus), 0x9e3779b97f4a7c15ull + v);
    }
  }
  g_start.Wait(env.vcpus);
  if (env.vcpu == 0) guest::Phase("run");

  // A pass is one trip around the cycle: every line of the slice once.
  const uint64_t* words = mine.words();
  const uint64_t lines = mine.bytes / 64;
  guest::ProgressMeter meter;
  guest::WorkBudget budget(env, 10);
  uint64_t line = 0;
  while (lines != 0 && budget.StartPass()) {
    for (uint64_t hop = 0; hop < lines; ++hop) {
      line = words[line * kLineWords];
      if (hop % kHopsPerCheck == kHopsPerCheck - 1) {
        meter.Add(kHopsPerCheck * 64);
        if (!budget.ContinuePass()) break;
      }
    }
    meter.Add(lines % kHopsPerCheck * 64);
  }
  meter.Flush();
  guest::Result("bytes", meter.total());
  guest::Result("last_line", line);
  return 0;
}
