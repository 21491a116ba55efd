// Page moves with the guest's mappings dropped first: the kernel's NUMA
// balancing migrates pages whose mappings its scanner already removed, a
// range at a time, while move_pages(2) of a page that KVM maps costs a TLB
// shootdown to every CPU running a vCPU thread and an MMU-notifier flush of
// every vCPU, per page (in the NUMA lab ~2-5 ms a page). For guest memory in
// a shared file (memfd, hugetlbfs) a batch can do better:
//   1. MADV_DONTNEED each contiguous run of the batch in the guest's
//      mapping: one invalidation per run; the file keeps the data;
//   2. move the pages through the same mapping in a child process that
//      KVM does not know and no vCPU runs in (actuation/alias_process.h),
//      populated for the run and dropped after: the unmap a migration does
//      interrupts nobody;
//   3. map the run back (`Remap`, e.g. the hinting-fault sampler's
//      UFFDIO_CONTINUE, which skips its armed probes), or let the guest's
//      next access fault it back from the page cache.
// A vCPU that touches a page of the run meanwhile faults it back as usual
// (a userfault the sampler serves, or a minor fault): the kernel's page
// locks order that against the move, so no access is lost or torn; such a
// page is mapped twice then and stays where it is this time.
#ifndef NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_
#define NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "balancer/actuation/alias_process.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

class UnmappedMoves final : public MoveStaging {
 public:
  // Maps every region in `alias` (not owned; it must outlive this object).
  // Fails (the caller moves pages where they are) unless every region is in
  // a shared file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UnmappedMoves>> Create(
      const std::vector<GuestRamRegion>& ram, AliasProcess* alias);
  UnmappedMoves(const UnmappedMoves&) = delete;
  UnmappedMoves& operator=(const UnmappedMoves&) = delete;

  // Maps [guest, guest + bytes) of the guest's mapping back after a move.
  using Remap = std::function<void(uint8_t* guest, uint64_t bytes)>;
  void set_remap(Remap remap) { remap_ = std::move(remap); }

  StagedPages Stage(const std::vector<void*>& pages) override;
  void Unstage() override;

  uint64_t runs() const { return runs_total_; }  // invalidations, one per run
  bool alias_alive() const { return alias_->alive(); }

 private:
  struct Region {
    uint8_t* guest = nullptr;
    uint64_t bytes = 0;
    uint64_t page_bytes = kGuestPageBytes;
    uint8_t* alias = nullptr;  // the same memory in the alias process
  };
  UnmappedMoves(std::vector<Region> regions, AliasProcess* alias)
      : regions_(std::move(regions)), alias_(alias) {}
  const Region* RegionOf(const uint8_t* guest) const;

  const std::vector<Region> regions_;
  AliasProcess* const alias_;
  // The batch's runs between Stage and Unstage, in the guest's mapping and
  // in the alias process.
  std::vector<AliasProcess::Range> staged_, staged_alias_;
  Remap remap_;
  uint64_t runs_total_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_
