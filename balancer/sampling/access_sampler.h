// The interface every access sampler implements (dirty log, dirty ring,
// hinting faults). A sampler watches guest memory through the window the
// scanner arms each period and reports what it saw.
#ifndef NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLER_H_
#define NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/access_sample.h"
#include "balancer/sampling/scan_window.h"

namespace numavm {

// Per-VM counters, in the JSON report too.
struct SamplerStats {
  uint64_t pages_armed = 0;  // the kernel's numa_pte_updates
  uint64_t samples = 0;      // accesses reported (faults, dirty pages)
  uint64_t reads = 0;
  uint64_t writes = 0;
  uint64_t unattributed = 0;  // samples with no vCPU (VM-wide or a VMM thread)
  // Hinting faults KVM took in a worker thread (async page faults, Linux
  // guests), given to the vCPU blocked at the time, or to the vCPUs of
  // the page's guest NUMA cell in turn (blocked_vcpu.h).
  uint64_t inferred = 0;
  uint64_t by_cell = 0;
  uint64_t windows = 0;            // scan periods completed
  std::vector<uint64_t> per_vcpu;  // samples by vCPU index
  absl::Duration helper_cpu_time;  // CPU time of the sampler's own threads
  uint64_t ring_overruns = 0;      // dirty ring only: KVM ran a lap past the ring's end
  uint64_t unarmed_entries = 0;    // dirty ring only: entries outside the armed regions
  // evict only: the arming thread's CPU time in each step of taking probes
  // away (write-protect, read, node query, free), where the NUMA lab's
  // milliseconds a call go.
  struct EvictSteps {
    absl::Duration protect, read, query, free;
  } evict;
};

class AccessSampler {
 public:
  virtual ~AccessSampler() = default;

  virtual absl::string_view name() const = 0;
  // The guest memory it can watch, and the granularity it arms at (4 KiB
  // pages; 512 for 2 MiB hugetlb backing): what a ScanControl walks.
  virtual std::vector<GfnRange> Coverage() const = 0;
  virtual uint64_t ArmAlignment() const { return 1; }
  // Begins watching; safe while vCPUs run. Nothing is armed yet.
  virtual absl::Status Start() = 0;
  // End of a scan period: appends what the armed window saw to `out`.
  virtual absl::Status Collect(AccessBatch& out) = 0;
  // Arms what the scan control planned (within Coverage()) for the coming
  // period: the probe pages where each sample costs a fault, else the
  // regions. Separate from Collect so that the balancer can look at the
  // pages it was told about before they are armed again.
  virtual absl::Status Arm(const ScanPlan& plan) = 0;
  // Whether `region` has any memory to watch now (ScanControl::Resident:
  // the sweep passes over regions without): the samplers that arm probe
  // pages skip pages not in memory, so they ask mincore; the others
  // (dirty ring and log) watch whole regions and say yes.
  virtual bool Resident(const GfnRange& region) const { return true; }
  // What one sample costs the guest (a fault round trip), for the scan
  // control's stall budget.
  virtual absl::Duration FaultCost() const { return kWriteProtectFaultCost; }
  // A KVM write-protect fault (a dirty-ring entry, a dirty-log page): the
  // figure for hardware, not measured here.
  static constexpr absl::Duration kWriteProtectFaultCost = absl::Microseconds(1);
  // A page move dropped the guest's mappings of [host, host + bytes)
  // (actuation/unmapped_moves.h): a sampler that takes faults there maps
  // the pages back that it does not watch. Default: nothing; the guest's
  // next access faults them back from the page cache. Called from the
  // thread that arms.
  virtual void Remap(uint8_t* host, uint64_t bytes) {}
  // A move asks for guest page `gfn` on host node `node` while the sampler
  // holds the page away from the guest (evict): the page comes back there.
  // False (the default) where the sampler does not hold it: it moves where
  // it is. Called from the thread that arms.
  virtual bool MoveHeld(uint64_t gfn, int node) { return false; }
  // Stops watching and leaves guest memory as it was; safe while vCPUs run.
  virtual void Stop() = 0;
  virtual SamplerStats stats() const = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLER_H_
