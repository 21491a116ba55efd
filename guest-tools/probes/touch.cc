// Probe for sampler tests: vCPU v touches `pages=` pages starting at
// heap_start + v * 2 * pages * 4 KiB (so untouched pages lie between the
// vCPUs' ranges), one word per page, reading (write=0) or writing (write=1),
// over and over for `seconds=` of guest time.
#include "workloads/common.h"

int WorkloadMain(const guest::Env& env) {
  const uint64_t pages = guest::ArgU64("pages", 64);
  const bool write = guest::ArgU64("write", 1) != 0;
  const uint64_t start = env.heap_start + env.vcpu * 2 * pages * guest::kPageBytes;
  if (start + pages * guest::kPageBytes > env.heap_end) return 2;
  volatile uint64_t* base = reinterpret_cast<volatile uint64_t*>(start);
  const uint64_t words_per_page = guest::kPageBytes / 8;
  guest::Deadline deadline(env, guest::ArgU64("seconds", 2));
  uint64_t sum = 0, rounds = 0;
  while (!deadline.Passed()) {
    for (uint64_t p = 0; p < pages; ++p) {
      if (write) {
        base[p * words_per_page] = rounds;
      } else {
        sum += base[p * words_per_page];
      }
    }
    ++rounds;
  }
  guest::Result("rounds", rounds);
  guest::Result("sum", sum);
  return 0;
}
