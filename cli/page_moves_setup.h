// How pages move in `numavm run`: protected (the default where the kernel
// can: balancer/actuation/protected_moves.h), unmapped through the alias
// process (--migrate-unmapped: balancer/actuation/alias_process.h) or
// mapped (--migrate-mapped, and wherever the others cannot be) - for the
// balancer's moves and the churn's alike, and what the report says about
// it.
#ifndef NUMAVM_CLI_PAGE_MOVES_SETUP_H_
#define NUMAVM_CLI_PAGE_MOVES_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "balancer/actuation/alias_process.h"
#include "balancer/host_placement_view.h"
#include "balancer/sampling/access_sampler.h"
#include "cli/migration_churn.h"
#include "cli/run_options.h"
#include "vmm/virtual_machine.h"

namespace numavm {

struct AliasSetup {
  std::unique_ptr<AliasProcess> alias;  // nullptr: pages do not move unmapped
  std::string note;                     // why not, where it was asked for
};

// Forks the alias process when `options` ask for unmapped moves of memfd or
// hugetlb memory and something may move (balancing on, or the churn). Call
// early: while the process is small and has one thread.
AliasSetup StartAliasProcess(const RunOptions& options);

// Gives `view` (the balancer's moves) and `churn` (null without
// --migrate-churn) their way of moving pages; `sampler` (may be null)
// re-arms what unmapped moves map back. Returns notes for the report: why
// pages move mapped where another way was asked for or is the default.
std::vector<std::string> SetUpPageMoves(const RunOptions& options, VirtualMachine& vm,
                                        AliasProcess* alias, AccessSampler* sampler,
                                        HostPlacementView& view, MigrationChurn* churn);

// At the end of the run: how pages moved, in notes (the alias process
// ending during the run, the protected windows and their quiet gaps, the
// fence's repairs).
std::vector<std::string> PageMovesEndNotes(const HostPlacementView& view, const MoveFence& fence,
                                           uint64_t windows);

}  // namespace numavm

#endif  // NUMAVM_CLI_PAGE_MOVES_SETUP_H_
