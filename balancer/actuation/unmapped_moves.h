// Page moves with the guest's mappings dropped first: the kernel's NUMA
// balancing migrates pages whose mappings its scanner already removed, a
// range at a time, while move_pages(2) of a page that KVM maps costs an
// MMU-notifier invalidation, hence a TLB flush of every vCPU, per page (in
// the NUMA lab ~1-7 ms a page). For guest memory in a shared file (memfd,
// hugetlbfs) a batch can do better:
//   1. MADV_DONTNEED each contiguous run of the batch in the guest's
//      mapping: one invalidation per run; the file keeps the data;
//   2. move the pages through a second mapping of the same file that KVM
//      does not know (populated for the run, dropped after): no vCPU is
//      interrupted per page;
//   3. map the run back (`Remap`, e.g. the hinting-fault sampler's
//      UFFDIO_CONTINUE, which skips its armed probes), or let the guest's
//      next access fault it back from the page cache.
// A vCPU that touches a page of the run meanwhile faults it back as usual
// (a userfault the sampler serves, or a minor fault): the kernel's page
// locks order that against the move, so no access is lost or torn.
// Opt-in (`numavm run --migrate-unmapped`): in the NUMA lab a page cost the
// same with and without it (docs/numa-lab.md), so what dominates there is
// not KVM's flush; the alias is in this process, so the host's own TLB
// shootdown per page (to every CPU running a vCPU thread) remains - a
// helper process holding the alias would remove that too.
#ifndef NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_
#define NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/sampling/guest_ram.h"

namespace numavm {

class UnmappedMoves final : public MoveStaging {
 public:
  // Maps the file behind each region a second time. Fails (the caller moves
  // pages where they are) unless every region is in a shared file.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UnmappedMoves>> Create(
      const std::vector<GuestRamRegion>& ram);
  ~UnmappedMoves() override;
  UnmappedMoves(const UnmappedMoves&) = delete;
  UnmappedMoves& operator=(const UnmappedMoves&) = delete;

  // Maps [guest, guest + bytes) of the guest's mapping back after a move.
  using Remap = std::function<void(uint8_t* guest, uint64_t bytes)>;
  void set_remap(Remap remap) { remap_ = std::move(remap); }

  std::vector<void*> Stage(const std::vector<void*>& pages) override;
  void Unstage() override;

  uint64_t runs() const { return runs_total_; }  // invalidations, one per run

 private:
  struct Alias {
    uint8_t* guest = nullptr;
    uint64_t bytes = 0;
    uint64_t page_bytes = kGuestPageBytes;
    uint8_t* alias = nullptr;
  };
  struct Run {
    uint8_t* guest = nullptr;
    uint8_t* alias = nullptr;
    uint64_t bytes = 0;
  };
  explicit UnmappedMoves(std::vector<Alias> aliases) : aliases_(std::move(aliases)) {}
  const Alias* AliasOf(const uint8_t* guest) const;

  std::vector<Alias> aliases_;
  std::vector<Run> staged_;  // the batch between Stage and Unstage
  Remap remap_;
  uint64_t runs_total_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_UNMAPPED_MOVES_H_
