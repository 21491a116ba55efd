// `numavm run --migrate-unmapped`: the alias process (balancer/actuation/
// alias_process.h), started before the VM exists and only where pages may
// move unmapped, and what the report says about it.
#ifndef NUMAVM_CLI_UNMAPPED_MOVES_SETUP_H_
#define NUMAVM_CLI_UNMAPPED_MOVES_SETUP_H_

#include <memory>
#include <string>

#include "balancer/actuation/alias_process.h"
#include "balancer/host_placement_view.h"
#include "cli/run_options.h"

namespace numavm {

struct AliasSetup {
  std::unique_ptr<AliasProcess> alias;  // nullptr: pages move where they are mapped
  std::string note;                     // why not, where it was asked for
};

// Forks the alias process when `options` ask for unmapped moves of memfd or
// hugetlb memory and something may move (balancing on, or the churn). Call
// early: while the process is small and has one thread.
AliasSetup StartAliasProcess(const RunOptions& options);

// At the end of the run: a note if the alias process ended during it.
std::string AliasEndNote(const HostPlacementView& view);

}  // namespace numavm

#endif  // NUMAVM_CLI_UNMAPPED_MOVES_SETUP_H_
