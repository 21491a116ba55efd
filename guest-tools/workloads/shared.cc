// shared: every vCPU reads and writes every page of one region (each its own
// cache line within each page). No placement makes all of it local; the right
// answer is to leave it in place rather than bounce pages between nodes.
#include "workloads/common.h"

namespace {
guest::Barrier g_start;
constexpr uint64_t kPagesPerCheck = 256;
}  // namespace

int WorkloadMain(const guest::Env& env) {
  const guest::Region all = guest::WorkingSet(env);
  if (env.vcpu == 0) {
    guest::Layout(all.start, all.bytes, guest::MaskOf(0, env.vcpus));
    guest::Phase("first-touch");
    guest::TouchPages(all);
  }
  g_start.Wait(env.vcpus);
  if (env.vcpu == 0) guest::Phase("run");

  uint64_t* words = all.words();
  const uint64_t pages = all.bytes / guest::kPageBytes;
  // vCPU v owns line (v mod 64) of every page: same pages, different lines.
  const uint64_t offset = (env.vcpu % 64) * 8;
  const uint64_t lines_per_page = guest::kPageBytes / guest::Stride();
  guest::ProgressMeter meter;
  guest::WorkBudget budget(env, 10);
  bool going = true;
  while (going && budget.StartPass()) {
    for (uint64_t p = 0; p < pages; ++p) {
      words[p * (guest::kPageBytes / 8) + offset] += 1;  // read-modify-write
      if (p % kPagesPerCheck == kPagesPerCheck - 1) {
        // Each touched page stands for a page's share of traffic.
        meter.Add(kPagesPerCheck * guest::kPageBytes / lines_per_page);
        if (!budget.ContinuePass()) {
          going = false;
          break;
        }
      }
    }
  }
  meter.Flush();
  guest::Result("bytes", meter.total());
  return 0;
}
