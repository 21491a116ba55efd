#include "vmm/vm_config.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "base/size.h"
#include "vmm/guest_abi.h"
#include "vmm/x86_boot.h"

namespace numavm {

absl::Status NormalizeVmConfig(VmConfig& config) {
  if (config.vcpus < 1 || config.vcpus > static_cast<int>(abi::kMaxVcpus)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--vcpus must be between 1 and ", abi::kMaxVcpus, ", got ", config.vcpus));
  }
  const uint64_t align = BackingAlignment(config.backing);
  const bool from_memory = config.cells.empty();  // one cell made of --memory
  if (config.cells.empty()) {
    std::vector<int> all;
    for (int i = 0; i < config.vcpus; ++i) all.push_back(i);
    config.cells.push_back(CellConfig{config.memory_bytes, all});
  }
  if (config.cells.size() > abi::kMaxCells) {
    return absl::InvalidArgumentError(
        absl::StrCat("at most ", abi::kMaxCells, " guest cells, got ", config.cells.size()));
  }
  uint64_t total = 0;
  std::set<int> seen;
  for (size_t i = 0; i < config.cells.size(); ++i) {
    const CellConfig& cell = config.cells[i];
    if (cell.memory_bytes == 0 || cell.memory_bytes % align != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          from_memory ? std::string("--memory ") : absl::StrCat("cell ", i, " memory "),
          cell.memory_bytes % 1024 == 0 ? FormatSize(cell.memory_bytes)
                                        : absl::StrCat(cell.memory_bytes, " bytes"),
          " must be a non-zero multiple of ", FormatSize(align)));
    }
    total += cell.memory_bytes;
    for (int v : cell.vcpus) {
      if (v < 0 || v >= config.vcpus) {
        return absl::InvalidArgumentError(
            absl::StrCat("cell ", i, " names vCPU ", v, ", but the VM has ", config.vcpus));
      }
      if (!seen.insert(v).second) {
        return absl::InvalidArgumentError(absl::StrCat("vCPU ", v, " is in more than one cell"));
      }
    }
  }
  if (static_cast<int>(seen.size()) != config.vcpus) {
    return absl::InvalidArgumentError("every vCPU must belong to exactly one cell");
  }
  config.memory_bytes = total;
  if (config.cells[0].memory_bytes < kMinGuestMemory) {
    return absl::InvalidArgumentError(absl::StrCat("--memory (or the first cell) must be at least ",
                                                   FormatSize(kMinGuestMemory), ", got ",
                                                   FormatSize(config.cells[0].memory_bytes)));
  }
  if (total > MaxGuestRamBytes()) {
    return absl::InvalidArgumentError(absl::StrCat("--memory ", FormatSize(total),
                                                   " exceeds the VMM limit of ",
                                                   FormatSize(MaxGuestRamBytes())));
  }
  return absl::OkStatus();
}

absl::Status CheckHostCanFit(const VmConfig& config, uint64_t host_total, uint64_t host_available) {
  if (config.memory_bytes > host_total) {
    return absl::ResourceExhaustedError(absl::StrCat("--memory ", FormatSize(config.memory_bytes),
                                                     " is larger than this host's memory (",
                                                     FormatSize(host_total), ")"));
  }
  if (config.memory_bytes > host_available) {
    return absl::ResourceExhaustedError(absl::StrCat("--memory ", FormatSize(config.memory_bytes),
                                                     " is more than this host has available (",
                                                     FormatSize(host_available), ")"));
  }
  return absl::OkStatus();
}

}  // namespace numavm
