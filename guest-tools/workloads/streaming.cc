#include "workloads/streaming.h"

#include "workloads/common.h"

namespace guest {
namespace {

constexpr uint64_t kDefaultSeconds = 10;
Barrier g_start;

struct Team {
  uint32_t active;  // vCPUs doing work
  uint32_t groups;  // 2 for numa01 shapes with >= 2 active vCPUs, else 1
  uint32_t GroupOf(uint32_t vcpu) const { return vcpu * groups / active; }
  uint32_t GroupFirst(uint32_t g) const { return (g * active + groups - 1) / groups; }
  uint32_t GroupSize(uint32_t g) const { return GroupFirst(g + 1) - GroupFirst(g); }
};

Team MakeTeam(const Env& env, const StreamingShape& shape) {
  uint32_t active = static_cast<uint32_t>(ArgU64("vcpus", env.vcpus));
  if (shape.half_vcpus) active = (active + 1) / 2;
  if (active == 0 || active > env.vcpus) active = env.vcpus;
  uint32_t groups = shape.sharing == Sharing::kSlice || active < 2 ? 1 : 2;
  return Team{active, groups};
}

// The memory vCPU `vcpu` streams over.
Region TargetOf(const Region& all, const Team& team, Sharing sharing, uint32_t vcpu) {
  switch (sharing) {
    case Sharing::kGroupRegion:
      return Slice(all, team.GroupOf(vcpu), team.groups);
    case Sharing::kGroupThenSlice:
    case Sharing::kSlice:
      return Slice(all, vcpu, team.active);
  }
  return all;
}

// Tells the VMM which vCPUs use which memory, before the first touch, so
// that --placement=hard|inverse can bind it as autonuma-benchmark does.
void DeclareLayout(const Region& all, const Team& team, Sharing sharing) {
  if (sharing == Sharing::kGroupRegion) {
    for (uint32_t g = 0; g < team.groups; ++g) {
      Region r = Slice(all, g, team.groups);
      Layout(r.start, r.bytes, MaskOf(team.GroupFirst(g), team.GroupSize(g)));
    }
    return;
  }
  for (uint32_t v = 0; v < team.active; ++v) {
    Region r = Slice(all, v, team.active);
    Layout(r.start, r.bytes, MaskOf(v, 1));
  }
}

}  // namespace

int RunStreaming(const Env& env, const StreamingShape& shape) {
  const Team team = MakeTeam(env, shape);
  const Region all = WorkingSet(env);
  const bool working = env.vcpu < team.active;
  if (env.vcpu == 0) {
    DeclareLayout(all, team, shape.sharing);
    Phase("first-touch");
  }
  // numa01: the first group touches all memory; numa02: vCPU 0 does.
  uint32_t toucher_count = shape.sharing == Sharing::kSlice ? 1 : team.GroupSize(0);
  if (env.vcpu < toucher_count) TouchPages(Slice(all, env.vcpu, toucher_count));
  g_start.Wait(env.vcpus);
  if (env.vcpu == 0) Phase("run");
  if (!working) return 0;

  const Region target = TargetOf(all, team, shape.sharing, env.vcpu);
  ProgressMeter meter;
  WorkBudget budget(env, kDefaultSeconds);
  uint64_t checksum = 0;
  for (uint64_t pass = 1; budget.StartPass(); ++pass) {
    if (shape.access == Access::kWrite) {
      WritePass(target, pass, meter, budget);
    } else {
      checksum += ReadPass(target, meter, budget);
    }
  }
  meter.Flush();
  Result("bytes", meter.total());
  if (shape.access == Access::kRead) Result("checksum", checksum);
  return 0;
}

}  // namespace guest
