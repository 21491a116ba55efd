// Any bytes as what numavm reads from the kernel: /proc/PID/maps and numa_maps, /proc/zoneinfo,
// /proc/meminfo, sysfs CPU lists.
#include <cstddef>
#include <cstdint>

#include "balancer/actuation/pfn_nodes.h"
#include "balancer/libvirt/qemu_process.h"
#include "balancer/topology/topology.h"
#include "vmm/host_memory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto maps = numavm::ParseMaps(text); maps.ok()) (void)numavm::FindGuestRam(*maps, 1 << 20);
  if (auto numa_maps = numavm::ParseNumaMaps(text); numa_maps.ok()) {
    (void)numavm::ResidentBytesPerNode(*numa_maps, {{0, UINTPTR_MAX}});
  }
  if (auto zones = numavm::PfnNodeMap::Parse(text); zones.ok()) (void)zones->NodeOf(size);
  (void)numavm::ParseMeminfo(text);
  (void)numavm::ParseCpuList(text);
  return 0;
}
