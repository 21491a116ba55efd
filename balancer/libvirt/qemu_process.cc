#include "balancer/libvirt/qemu_process.h"

#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "balancer/sampling/proc_file.h"

namespace numavm {
namespace {

absl::StatusOr<nlohmann::json> ReturnOf(absl::string_view reply, absl::string_view what) {
  nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a QMP reply"));
  }
  if (j.contains("error")) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": QMP error ", j["error"].value("desc", std::string("?"))));
  }
  if (!j.contains("return")) return absl::InvalidArgumentError(absl::StrCat(what, ": no return"));
  return j["return"];
}

}  // namespace

absl::StatusOr<std::vector<pid_t>> ParseVcpuThreads(absl::string_view reply) {
  absl::StatusOr<nlohmann::json> r = ReturnOf(reply, "query-cpus-fast");
  if (!r.ok()) return r.status();
  if (!r->is_array()) return absl::InvalidArgumentError("query-cpus-fast: return is not a list");
  std::vector<pid_t> tids(r->size(), 0);
  for (const auto& cpu : *r) {
    if (!cpu.is_object() || !cpu.contains("cpu-index") || !cpu.contains("thread-id") ||
        !cpu["cpu-index"].is_number_unsigned() || !cpu["thread-id"].is_number_integer()) {
      return absl::InvalidArgumentError("query-cpus-fast: entry without cpu-index and thread-id");
    }
    const size_t index = cpu["cpu-index"].get<size_t>();
    if (index >= tids.size())
      return absl::InvalidArgumentError("query-cpus-fast: cpu-index out of range");
    tids[index] = cpu["thread-id"].get<pid_t>();
  }
  return tids;
}

absl::StatusOr<uint64_t> ParseMemdevBytes(absl::string_view reply) {
  absl::StatusOr<nlohmann::json> r = ReturnOf(reply, "query-memdev");
  if (!r.ok()) return r.status();
  if (!r->is_array()) return absl::InvalidArgumentError("query-memdev: return is not a list");
  uint64_t total = 0;
  for (const auto& m : *r) {
    if (!m.is_object() || !m.contains("size") || !m["size"].is_number_unsigned()) {
      return absl::InvalidArgumentError("query-memdev: backend without a size");
    }
    total += m["size"].get<uint64_t>();
  }
  return total;
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

}  // namespace numavm
