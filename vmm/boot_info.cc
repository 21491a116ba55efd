#include "vmm/boot_info.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "vmm/guest_abi.h"

namespace numavm {

absl::Status WriteBootInfo(const VmConfig& config, GuestMemory& memory, uint32_t tsc_khz) {
  auto* info = memory.As<abi::BootInfo>(GuestAddress{abi::kBootInfoAddress});
  if (info == nullptr) return absl::InternalError("no room for BootInfo");
  if (config.payload_args.size() >= sizeof(info->args)) {
    return absl::InvalidArgumentError(absl::StrCat("payload arguments are ",
                                                   config.payload_args.size(), " bytes; at most ",
                                                   sizeof(info->args) - 1, " fit"));
  }
  std::memset(info, 0, sizeof(*info));
  info->magic = abi::kBootMagic;
  info->version = abi::kAbiVersion;
  info->vcpu_count = static_cast<uint32_t>(config.vcpus);
  info->ram_bytes = memory.total_bytes();
  info->heap_start = abi::kHeapStart;
  info->heap_end = memory.total_bytes();
  info->tsc_khz = tsc_khz;
  info->cell_count = static_cast<uint32_t>(config.cells.size());
  for (size_t i = 0; i < config.cells.size(); ++i) {
    const GuestRegion& region = memory.regions()[i];
    info->cells[i].start = region.start.value;
    info->cells[i].size = region.bytes;
    for (int v : config.cells[i].vcpus) info->cells[i].vcpu_mask |= 1ull << v;
  }
  std::memcpy(info->args, config.payload_args.data(), config.payload_args.size());
  return absl::OkStatus();
}

}  // namespace numavm
