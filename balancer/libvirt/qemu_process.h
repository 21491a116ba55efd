// What numavm needs to know about a running QEMU from outside: its pid and
// where guest RAM is mapped in it, from /proc alone - never through QMP
// passthrough, which libvirt marks as tainting the domain
// ("custom-monitor").
#ifndef NUMAVM_BALANCER_LIBVIRT_QEMU_PROCESS_H_
#define NUMAVM_BALANCER_LIBVIRT_QEMU_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/actuation/page_nodes.h"

namespace numavm {

// The QEMU process of the libvirt domain with `uuid`: the one process under
// `proc_root` whose command line has "-uuid UUID" (libvirt always passes
// it). NotFound when none has; FailedPrecondition when several have.
absl::StatusOr<pid_t> FindQemuProcess(absl::string_view uuid,
                                      const std::string& proc_root = "/proc");

// The process a thread belongs to (Tgid in /proc/TID/status).
absl::StatusOr<pid_t> ProcessOfThread(pid_t tid);

// The vCPU threads of QEMU process `pid`, vCPU index -> thread id, by the
// names QEMU gives them ("CPU 3/KVM", "CPU 3/TCG"); empty if it has none
// or has ended.
std::map<int, pid_t> QemuVcpuThreads(pid_t pid, const std::string& proc_root = "/proc");

struct MapsEntry {
  uintptr_t start = 0, end = 0;
  bool writable = false;
  std::string path;  // empty for anonymous memory
  uint64_t bytes() const { return end - start; }
};
absl::StatusOr<std::vector<MapsEntry>> ParseMaps(absl::string_view text);

// Guest RAM of `ram_bytes` in `maps`: a writable mapping of exactly that
// size (memfd or anonymous), else the smallest writable one up to 4 MiB
// larger (QEMU may add alignment), trimmed to `ram_bytes`.
absl::StatusOr<HostRange> FindGuestRam(const std::vector<MapsEntry>& maps, uint64_t ram_bytes);

// One line of /proc/PID/numa_maps: a mapping (by its start), and how many
// of its pages are resident on each node, in its kernel page size (4 KiB,
// or a hugetlb size; a transparent huge page counts as 512 4 KiB pages).
struct NumaMapsEntry {
  uintptr_t start = 0;
  uint64_t page_bytes = 4096;
  std::map<int, uint64_t> pages_per_node;  // kernel node id -> pages
};
absl::StatusOr<std::vector<NumaMapsEntry>> ParseNumaMaps(absl::string_view text);

// Bytes resident on each host node (kernel node id) of the mappings that
// start inside `ranges`, from `numa_maps` - the kernel's own count, for the
// whole of each mapping at once (a mapping that starts inside a range and
// runs past its end counts whole: guest RAM's alignment slack, up to
// 4 MiB). Empty when no such mapping has a resident page.
std::map<int, uint64_t> ResidentBytesPerNode(const std::vector<NumaMapsEntry>& numa_maps,
                                             const std::vector<HostRange>& ranges);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_QEMU_PROCESS_H_
