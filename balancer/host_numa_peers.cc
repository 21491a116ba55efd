#include "balancer/host_numa_peers.h"

#include <dirent.h>

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/proc_file.h"

namespace numavm {

std::optional<int> ReadKernelNumaBalancing(const std::string& proc) {
  int mode = 0;
  if (absl::SimpleAtoi(
          absl::StripAsciiWhitespace(ReadProcFile(proc + "/sys/kernel/numa_balancing")), &mode)) {
    return mode;
  }
  return std::nullopt;
}

HostNumaPeers DetectHostNumaPeers(const std::string& proc) {
  HostNumaPeers peers;
  peers.kernel_numa_balancing = ReadKernelNumaBalancing(proc);
  DIR* d = opendir(proc.c_str());
  if (d == nullptr) return peers;
  while (dirent* e = readdir(d)) {
    int pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid) || pid <= 0) continue;
    const std::string comm = ReadProcFile(absl::StrCat(proc, "/", pid, "/comm"));
    if (absl::StripAsciiWhitespace(comm) == "numad") peers.numad_pids.push_back(pid);
  }
  closedir(d);
  return peers;
}

std::vector<std::string> HostNumaPeerWarnings(const HostNumaPeers& peers) {
  std::vector<std::string> out;
  if (peers.kernel_numa_balancing && (*peers.kernel_numa_balancing & 1) != 0) {
    out.push_back(absl::StrCat(
        "the kernel's NUMA balancing is on (kernel.numa_balancing = ", *peers.kernel_numa_balancing,
        "): it also moves the memory of VMs with anonymous RAM (QEMU's default) and the two "
        "may undo each other's moves; 'sysctl kernel.numa_balancing=0' leaves them to numavm"));
  }
  if (!peers.numad_pids.empty()) {
    out.push_back(absl::StrCat("numad is running (pid ", absl::StrJoin(peers.numad_pids, ", "),
                               "): it also pins processes and moves their memory; stop it, or "
                               "keep numavm to --balance off|advise on the VMs it manages"));
  }
  return out;
}

}  // namespace numavm
