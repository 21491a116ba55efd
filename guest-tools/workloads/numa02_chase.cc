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

// A single random cycle through a slice's lines, built by inserting line i
// after a random one of lines 0..i-1: at every step the lines built so far
// form one cycle, so building can stop at any time with a shorter but
// whole chain.
struct CycleBuilder {
  uint64_t* words = nullptr;
  uint64_t lines = 0;  // in the slice
  uint64_t built = 0;  // in the cycle so far
  uint64_t state = 1;

  void Start(const guest::Region& r, uint64_t seed) {
    words = r.words();
    lines = r.bytes / 64;
    state = seed | 1;
    built = lines == 0 ? 0 : 1;
    if (built) words[0] = 0;
  }
  // Adds up to `count` lines; false once the slice is done.
  bool Grow(uint64_t count) {
    for (; built < lines && count > 0; ++built, --count) {
      const uint64_t j = NextRandom(state) % built;
      words[built * kLineWords] = words[j * kLineWords];
      words[j * kLineWords] = built;
    }
    return built < lines;
  }
};

CycleBuilder g_cycles[64];

}  // namespace

int WorkloadMain(const guest::Env& env) {
  // From the start: the set-up below counts against seconds= too.
  guest::WorkBudget budget(env, 10);
  const guest::Region all = guest::WorkingSet(env);
  const guest::Region mine = guest::Slice(all, env.vcpu, env.vcpus);
  if (env.vcpu == 0) {
    for (uint32_t v = 0; v < env.vcpus; ++v) {
      guest::Region r = guest::Slice(all, v, env.vcpus);
      guest::Layout(r.start, r.bytes, guest::MaskOf(v, 1));
    }
    guest::Phase("first-touch");
    // Set-up counts against seconds=: chains are built for at most half of
    // it (every line of every slice with iterations=), leaving the rest to
    // run; slices grow in turn, so a cut-short set-up leaves them alike.
    const guest::Deadline setup(env, (guest::SecondsAllowed(10) + 1) / 2);
    const uint32_t n = env.vcpus < 64 ? env.vcpus : 64;
    for (uint32_t v = 0; v < n; ++v) {
      g_cycles[v].Start(guest::Slice(all, v, env.vcpus), 0x9e3779b97f4a7c15ull + v);
    }
    for (bool more = true; more && !setup.Passed();) {
      more = false;
      for (uint32_t v = 0; v < n; ++v) more = g_cycles[v].Grow(kHopsPerCheck) || more;
    }
  }
  g_start.Wait(env.vcpus);
  if (env.vcpu == 0) guest::Phase("run");

  // A pass is one trip around the cycle: every line of the slice once.
  const uint64_t* words = mine.words();
  const uint64_t lines = env.vcpu < 64 ? g_cycles[env.vcpu].built : 0;
  guest::ProgressMeter meter;
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
