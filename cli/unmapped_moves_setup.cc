#include "cli/unmapped_moves_setup.h"

#include "absl/strings/str_cat.h"

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

std::string AliasEndNote(const HostPlacementView& view) {
  if (!view.moves_unmapped() || view.alias_alive()) return "";
  return "the alias process of --migrate-unmapped ended during the run: pages moved where they "
         "are mapped from then on";
}

}  // namespace numavm
