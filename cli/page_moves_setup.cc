#include "cli/page_moves_setup.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/sampling_setup.h"
#include "vmm/guest_abi.h"

namespace numavm {

AliasSetup StartAliasProcess(const RunOptions& options) {
  AliasSetup out;
  const bool shared_file =
      options.vm.backing == Backing::kMemfd || options.vm.backing == Backing::kHugetlb;
  const bool moves = options.balance.mode == BalanceMode::kOn || options.migrate_churn;
  if (!options.migrate_unmapped || !shared_file || !moves) return out;
  absl::StatusOr<std::unique_ptr<AliasProcess>> a = AliasProcess::Start();
  if (a.ok()) {
    out.alias = *std::move(a);
  } else {
    out.note = absl::StrCat("pages move where they are mapped: ", a.status().message());
  }
  return out;
}

std::vector<std::string> SetUpPageMoves(const RunOptions& options, VirtualMachine& vm,
                                        AliasProcess* alias, AccessSampler* sampler,
                                        HostPlacementView& view, MigrationChurn* churn) {
  std::vector<std::string> notes;
  const bool moves = options.balance.mode == BalanceMode::kOn || options.migrate_churn;
  if (!moves) return notes;
  if (sampler != nullptr) {
    view.set_held_pages([sampler](uint64_t gfn, int node) { return sampler->MoveHeld(gfn, node); });
  }
  if (alias != nullptr) {
    if (absl::Status u = view.MoveUnmapped(alias,
                                           [sampler](uint8_t* host, uint64_t bytes) {
                                             if (sampler != nullptr) sampler->Remap(host, bytes);
                                           });
        !u.ok()) {
      notes.push_back(absl::StrCat("pages move where they are mapped: ", u.message()));
    }
    if (churn != nullptr) churn->MoveUnmapped(GuestRamOf(vm), alias);
    return notes;
  }
  // Protected moves: the default, and where --migrate-unmapped cannot be
  // (anonymous memory). They take runs of guest memory away for a moment;
  // what KVM reads when it emulates an instruction must stay: a payload's
  // runtime (page tables, code, stacks, mailboxes: below the heap). Any
  // page of a Linux guest may be page table or code.
  if (options.migrate_mapped) return notes;
  if (!options.kernel.empty()) {
    notes.push_back(
        "pages move where they are mapped: a Linux guest's page tables and code may be on any "
        "page, which KVM reads when it emulates an instruction");
    return notes;
  }
  const std::vector<GfnRange> kept = {GfnRange{0, abi::kHeapStart / kGuestPageBytes}};
  if (absl::Status p = view.MoveProtected(&vm.move_fence(), kept); !p.ok()) {
    notes.push_back(absl::StrCat("pages move where they are mapped: ", p.message()));
    return notes;
  }
  if (churn != nullptr) {
    churn->MoveProtected(GuestRamOf(vm), &vm.move_fence(),
                         {{vm.memory().regions()[0].host(), abi::kHeapStart}});
  }
  return notes;
}

std::vector<std::string> PageMovesEndNotes(const HostPlacementView& view, const MoveFence& fence,
                                           uint64_t windows) {
  std::vector<std::string> notes;
  if (view.moves_unmapped() && !view.alias_alive()) {
    notes.push_back(
        "the alias process of --migrate-unmapped ended during the run: pages moved where they "
        "are mapped from then on");
  }
  if (windows > 0) {
    const double gaps = std::chrono::duration<double>(fence.gap_waited()).count();
    notes.push_back(absl::StrFormat(
        "protected page moves: %d windows, %.1f s of quiet gaps between them for the guest's "
        "page faults",
        windows, gaps));
  }
  if (const uint64_t h = view.held_moves(); h > 0) {
    notes.push_back(absl::StrCat(h,
                                 " page moves found the page evicted as a probe: it came back on "
                                 "the node asked for at its next access"));
  }
  if (const uint64_t r = fence.repairs(); r > 0) {
    notes.push_back(absl::StrCat(
        "a vCPU faulted on guest memory with no page move to explain it ", r,
        " time(s): numavm gave all guest memory its protection back and let it go on"));
  }
  return notes;
}

}  // namespace numavm
