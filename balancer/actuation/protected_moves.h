// Page moves as the kernel's NUMA balancing makes them: the pages out of
// every TLB first, a run at a time, then moved. move_pages(2) of a page a
// vCPU may have cached costs a TLB shootdown to every CPU running a vCPU
// thread and a KVM flush of every vCPU, per page (in the NUMA lab ~9 ms a
// page); the kernel's balancing migrates pages its scanner had made
// PROT_NONE, whose unmapping needs no flush. In the VMM's own process a
// batch can do the same:
//   1. raise the fence (base/move_fence.h) and mprotect each contiguous run
//      of the batch PROT_NONE: one shootdown and one KVM invalidation per
//      run;
//   2. move_pages finds the pages under their PROT_NONE entries (Linux 6.5
//      and later; 5.x-6.4 answer -ENOENT, so `Create` checks first) and
//      unmaps them without a flush;
//   3. give the runs back their protection and lower the fence.
// A vCPU that touches a run meanwhile leaves KVM_RUN with EFAULT and enters
// again once the fence is down; the VMM's own reads of guest memory wait
// for it. Works for anonymous memory, memfd and hugetlbfs alike.
// What it must not take away: memory KVM itself reads while it emulates an
// instruction (the guest's page tables and code, when the instruction does
// MMIO or string I/O) - the emulator's read would fail, and KVM would give
// the guest a page fault. Such memory is named by `set_kept` and its
// batches move where they are mapped; a guest whose every page may be page
// table or code (a Linux guest) should not use this.
#ifndef NUMAVM_BALANCER_ACTUATION_PROTECTED_MOVES_H_
#define NUMAVM_BALANCER_ACTUATION_PROTECTED_MOVES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/sampling/guest_ram.h"
#include "base/move_fence.h"

namespace numavm {

// Whether this kernel's move_pages(2) finds a page under a PROT_NONE
// mapping (FailedPrecondition, saying why, where it does not).
absl::Status CheckMovesUnderProtNone();

class ProtectedMoves final : public MoveStaging {
 public:
  // `ram` mapped read-write in this process; `fence` (not owned) is the one
  // the VM's vCPU threads and host accesses honour.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ProtectedMoves>> Create(
      const std::vector<GuestRamRegion>& ram, MoveFence* fence);
  ProtectedMoves(const ProtectedMoves&) = delete;
  ProtectedMoves& operator=(const ProtectedMoves&) = delete;

  // Host ranges whose pages are never taken away: a batch with one of them
  // moves as it is.
  struct Range {
    const uint8_t* start = nullptr;
    uint64_t bytes = 0;
  };
  void set_kept(std::vector<Range> kept) { kept_ = std::move(kept); }

  StagedPages Stage(const std::vector<void*>& pages) override;
  void Unstage() override;

  uint64_t windows() const { return windows_; }  // batches moved with the fence up
  uint64_t runs() const { return runs_; }        // their runs: one invalidation each

 private:
  struct Run {
    uint8_t* start = nullptr;
    uint64_t bytes = 0;
  };
  ProtectedMoves(std::vector<GuestRamRegion> ram, MoveFence* fence)
      : ram_(std::move(ram)), fence_(fence) {}
  const GuestRamRegion* RegionOf(const uint8_t* host) const;
  // Gives the first `count` staged runs their protection back.
  void Restore(size_t count);

  const std::vector<GuestRamRegion> ram_;
  MoveFence* const fence_;
  std::vector<Range> kept_;
  std::vector<Run> staged_;  // between Stage and Unstage, with the fence up
  bool raised_ = false;
  uint64_t windows_ = 0, runs_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_PROTECTED_MOVES_H_
