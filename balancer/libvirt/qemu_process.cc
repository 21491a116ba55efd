#include "balancer/libvirt/qemu_process.h"

#include <cstdint>
#include <filesystem>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/proc_file.h"

namespace numavm {
absl::StatusOr<pid_t> FindQemuProcess(absl::string_view uuid, const std::string& proc_root) {
  if (uuid.empty()) return absl::InvalidArgumentError("a domain without a UUID");
  std::vector<pid_t> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(proc_root, ec)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid <= 0) continue;
    // Arguments are NUL-separated; a process that ended meanwhile reads empty.
    const std::string cmdline = ReadProcFile(entry.path().string() + "/cmdline");
    std::vector<absl::string_view> args = absl::StrSplit(cmdline, '\0');
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "-uuid" && absl::EqualsIgnoreCase(args[i + 1], uuid)) {
        found.push_back(pid);
        break;
      }
    }
  }
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat("no QEMU process runs the domain with UUID ", uuid));
  }
  if (found.size() > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(found.size(), " processes claim the domain with UUID ", uuid));
  }
  return found[0];
}

absl::StatusOr<pid_t> ProcessOfThread(pid_t tid) {
  const std::string text = ReadProcFile(absl::StrCat("/proc/", tid, "/status"));
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::ConsumePrefix(&line, "Tgid:")) {
      int pid = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &pid) && pid > 0) return pid;
    }
  }
  return absl::NotFoundError(absl::StrCat("thread ", tid, " is gone"));
}

std::map<int, pid_t> QemuVcpuThreads(pid_t pid, const std::string& proc_root) {
  std::map<int, pid_t> out;
  std::error_code ec;
  const std::string task = absl::StrCat(proc_root, "/", pid, "/task");
  for (const auto& entry : std::filesystem::directory_iterator(task, ec)) {
    int tid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &tid) || tid <= 0) continue;
    const std::string name = ReadProcFile(entry.path().string() + "/comm");
    absl::string_view comm = absl::StripAsciiWhitespace(name);
    // "CPU <index>/<accelerator>"
    if (!absl::ConsumePrefix(&comm, "CPU ")) continue;
    const size_t slash = comm.find('/');
    int vcpu = -1;
    if (slash == absl::string_view::npos || !absl::SimpleAtoi(comm.substr(0, slash), &vcpu) ||
        vcpu < 0) {
      continue;
    }
    out[vcpu] = tid;
  }
  return out;
}

absl::StatusOr<std::vector<MapsEntry>> ParseMaps(absl::string_view text) {
  std::vector<MapsEntry> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 5)
      return absl::InvalidArgumentError(absl::StrCat("maps: bad line '", line, "'"));
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(f[0], '-');
    MapsEntry e;
    uint64_t start = 0, end = 0;
    if (!absl::SimpleHexAtoi(range.first, &start) || !absl::SimpleHexAtoi(range.second, &end) ||
        end < start) {
      return absl::InvalidArgumentError(absl::StrCat("maps: bad range '", f[0], "'"));
    }
    e.start = start;
    e.end = end;
    e.writable = f[1].size() >= 2 && f[1][1] == 'w';
    if (f.size() >= 6) {
      // The path may contain spaces ("(deleted)"): everything after inode.
      const size_t at = line.find(f[5], f[4].data() - line.data() + f[4].size());
      e.path = std::string(line.substr(at));
    }
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<HostRange> FindGuestRam(const std::vector<MapsEntry>& maps, uint64_t ram_bytes) {
  const MapsEntry* best = nullptr;
  for (const MapsEntry& e : maps) {
    if (!e.writable || e.bytes() < ram_bytes || e.bytes() > ram_bytes + (4ull << 20)) continue;
    if (best == nullptr || e.bytes() < best->bytes()) best = &e;
  }
  if (best == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no mapping of ", ram_bytes, " bytes (the guest RAM) in the QEMU process"));
  }
  return HostRange{best->start, ram_bytes};
}

absl::StatusOr<std::vector<NumaMapsEntry>> ParseNumaMaps(absl::string_view text) {
  std::vector<NumaMapsEntry> out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    // "7f2c5c000000 default file=/memfd:x\040(deleted) dirty=2 N0=2 N1=5
    // kernelpagesize_kB=4": the kernel escapes blanks in paths, so fields
    // are split by single spaces.
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    NumaMapsEntry e;
    uint64_t start = 0;
    if (f.size() < 2 || !absl::SimpleHexAtoi(f[0], &start)) {
      return absl::InvalidArgumentError(absl::StrCat("numa_maps: bad line '", line, "'"));
    }
    e.start = start;
    for (size_t i = 2; i < f.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(f[i], '=');
      uint64_t value = 0;
      if (kv.first == "kernelpagesize_kB") {
        if (!absl::SimpleAtoi(kv.second, &value) || value == 0 || value > (1ull << 30)) {
          return absl::InvalidArgumentError(absl::StrCat("numa_maps: bad '", f[i], "'"));
        }
        e.page_bytes = value * 1024;
        continue;
      }
      int node = -1;
      if (kv.first.size() < 2 || kv.first[0] != 'N' ||
          !absl::SimpleAtoi(kv.first.substr(1), &node)) {
        continue;  // anon=, dirty=, file=, huge, ... - not per node
      }
      if (node < 0 || node > 4095 || !absl::SimpleAtoi(kv.second, &value)) {
        return absl::InvalidArgumentError(absl::StrCat("numa_maps: bad '", f[i], "'"));
      }
      e.pages_per_node[node] += value;
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::map<int, uint64_t> ResidentBytesPerNode(const std::vector<NumaMapsEntry>& numa_maps,
                                             const std::vector<HostRange>& ranges) {
  std::map<int, uint64_t> out;
  for (const NumaMapsEntry& e : numa_maps) {
    bool inside = false;
    for (const HostRange& r : ranges) inside |= e.start >= r.start && e.start - r.start < r.bytes;
    if (!inside) continue;
    for (const auto& [node, pages] : e.pages_per_node) {
      // Saturating: a hostile or corrupt count must not wrap to a small one.
      const uint64_t bytes = pages > UINT64_MAX / e.page_bytes ? UINT64_MAX : pages * e.page_bytes;
      out[node] = bytes > UINT64_MAX - out[node] ? UINT64_MAX : out[node] + bytes;
    }
  }
  return out;
}

}  // namespace numavm
