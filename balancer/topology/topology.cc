#include "balancer/topology/topology.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace numavm {
namespace {

// The value of `key` (e.g. "MemTotal:") in a node's meminfo, in bytes.
uint64_t MeminfoValue(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    // "Node 0 MemTotal:  123 kB"
    for (size_t i = 0; i + 1 < f.size(); ++i) {
      uint64_t v = 0;
      if (f[i] == key && absl::SimpleAtoi(f[i + 1], &v)) return v * 1024;
    }
  }
  return 0;
}

}  // namespace

int Topology::IndexOf(int id) const {
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].id == id) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> Topology::NodeIndexOfCpus() const {
  std::vector<int> index;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int cpu : nodes[i].cpus) {
      if (cpu < 0) continue;
      if (cpu >= static_cast<int>(index.size())) index.resize(cpu + 1, -1);
      index[cpu] = static_cast<int>(i);
    }
  }
  return index;
}

std::vector<int> Topology::CpuNodeIds() const {
  std::vector<int> ids;
  for (const NumaNode& n : nodes) {
    if (!n.cpus.empty()) ids.push_back(n.id);
  }
  return ids;
}

absl::StatusOr<std::string> DirectorySysfsReader::Read(absl::string_view relative_path) const {
  std::string path = absl::StrCat(root_, "/", relative_path);
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text, int max_id) {
  std::vector<int> out;
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) return out;
  std::vector<bool> seen(static_cast<size_t>(max_id) + 1, false);
  for (absl::string_view part : absl::StrSplit(trimmed, ',')) {
    std::vector<absl::string_view> range = absl::StrSplit(part, '-');
    int64_t lo = 0, hi = 0;
    if (range.empty() || range.size() > 2 || !absl::SimpleAtoi(range[0], &lo) ||
        !absl::SimpleAtoi(range.back(), &hi) || lo < 0 || hi < lo) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", text, "'"));
    }
    if (hi > max_id) {
      return absl::InvalidArgumentError(
          absl::StrCat("CPU list '", text, "' names ", hi, "; ids go up to ", max_id));
    }
    for (int64_t c = lo; c <= hi; ++c) {
      if (seen[c]) {
        return absl::InvalidArgumentError(
            absl::StrCat("CPU list '", text, "' names ", c, " twice"));
      }
      seen[c] = true;
      out.push_back(static_cast<int>(c));
    }
  }
  return out;
}

absl::StatusOr<Topology> ReadTopology(const SysfsReader& reader) {
  absl::StatusOr<std::string> online = reader.Read("online");
  if (!online.ok()) return online.status();
  absl::StatusOr<std::vector<int>> ids = ParseCpuList(*online);
  if (!ids.ok()) return ids.status();
  if (ids->empty()) return absl::NotFoundError("no online NUMA nodes");
  Topology topology;
  for (int id : *ids) {
    NumaNode node;
    node.id = id;
    std::string dir = absl::StrCat("node", id, "/");
    if (absl::StatusOr<std::string> cpus = reader.Read(dir + "cpulist"); cpus.ok()) {
      absl::StatusOr<std::vector<int>> list = ParseCpuList(*cpus);
      if (!list.ok()) return list.status();
      node.cpus = *std::move(list);
    }
    if (absl::StatusOr<std::string> mem = reader.Read(dir + "meminfo"); mem.ok()) {
      node.memory_bytes = MeminfoValue(*mem, "MemTotal:");
      node.free_bytes = MeminfoValue(*mem, "MemFree:");
    }
    topology.nodes.push_back(std::move(node));
  }
  const size_t n = topology.nodes.size();
  topology.distance.assign(n, std::vector<int>(n, 20));
  for (size_t i = 0; i < n; ++i) {
    topology.distance[i][i] = 10;
    absl::StatusOr<std::string> row =
        reader.Read(absl::StrCat("node", topology.nodes[i].id, "/distance"));
    if (!row.ok()) continue;
    // sysfs lists the distance to each online node, in node order.
    std::vector<absl::string_view> f =
        absl::StrSplit(absl::StripAsciiWhitespace(*row), ' ', absl::SkipWhitespace());
    for (size_t j = 0; j < n && j < f.size(); ++j) {
      int d = 0;
      if (absl::SimpleAtoi(f[j], &d)) topology.distance[i][j] = d;
    }
  }
  return topology;
}

absl::StatusOr<Topology> ReadHostTopology() { return ReadTopology(DirectorySysfsReader()); }

}  // namespace numavm
