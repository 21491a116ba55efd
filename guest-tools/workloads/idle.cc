// idle: touches its memory once, then sleeps (yielding the host CPU) for
// `iterations` x 100 ms. A balancer must leave such a VM alone.
#include "workloads/common.h"

int WorkloadMain(const guest::Env& env) {
  const guest::Region all = guest::WorkingSet(env);
  if (env.vcpu == 0) {
    guest::Phase("first-touch");
    guest::TouchPages(all);
    guest::Phase("idle");
  }
  const uint64_t naps = guest::ArgU64("iterations", 10);
  for (uint64_t i = 0; i < naps; ++i) guest::SleepMicros(100000);
  return 0;
}
