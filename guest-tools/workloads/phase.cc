// phase: two vCPU groups each write their own region; halfway through the
// run the groups swap regions. A balancer must follow the change.
#include "workloads/common.h"

namespace {
guest::Barrier g_barrier;
}

int WorkloadMain(const guest::Env& env) {
  const guest::Region all = guest::WorkingSet(env);
  const uint32_t groups = env.vcpus >= 2 ? 2 : 1;
  const uint32_t group = env.vcpu * groups / env.vcpus;
  const uint32_t group_first = (group * env.vcpus + groups - 1) / groups;
  const uint32_t group_size = ((group + 1) * env.vcpus + groups - 1) / groups - group_first;
  const guest::Region a = guest::Slice(all, 0, 2);
  const guest::Region b = guest::Slice(all, 1, 2);
  if (env.vcpu == 0) {
    const uint32_t second = (env.vcpus + 1) / 2;
    guest::Layout(a.start, a.bytes, guest::MaskOf(0, second));
    guest::Layout(b.start, b.bytes,
                  groups == 2 ? guest::MaskOf(second, env.vcpus - second) : guest::MaskOf(0, 1));
    guest::Phase("first-touch");
    guest::TouchPages(all);
  }
  g_barrier.Wait(env.vcpus);

  // Each half of the run gets half the budget: iterations/2 passes or
  // seconds/2 of guest time.
  guest::ProgressMeter meter;
  for (int half = 0; half < 2; ++half) {
    if (env.vcpu == 0) guest::Phase(half == 0 ? "phase-1" : "phase-2");
    const bool use_a = (group == 0) == (half == 0);
    const guest::Region target = guest::Slice(use_a ? a : b, env.vcpu - group_first, group_size);
    guest::WorkBudget budget(env, 10, /*share=*/2);
    for (uint64_t pass = 1; budget.StartPass(); ++pass) {
      guest::WritePass(target, pass, meter, budget);
    }
    g_barrier.Wait(env.vcpus);
  }
  meter.Flush();
  guest::Result("bytes", meter.total());
  return 0;
}
