#include "balancer/topology/topology_file.h"

#include <fstream>
#include <set>
#include <sstream>


#include "absl/strings/str_cat.h"
#include "base/size.h"
#include "base/toml.h"

namespace numavm {
namespace {

absl::Status Bad(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

absl::StatusOr<uint64_t> SizeField(const toml::table& t, const char* key, absl::string_view where,
                                   absl::string_view source) {
  auto text = t[key].value<std::string>();
  if (!text) return Bad(source, absl::StrCat(where, ": ", key, " must be a size like \"16G\""));
  absl::StatusOr<uint64_t> bytes = ParseSize(*text);
  if (!bytes.ok()) return Bad(source, absl::StrCat(where, ": ", bytes.status().message()));
  return *bytes;
}

}  // namespace

absl::Status ValidateTopology(const Topology& t) {
  if (t.nodes.empty()) return absl::InvalidArgumentError("a topology needs at least one node");
  std::set<int> ids;
  for (const NumaNode& n : t.nodes) {
    if (!ids.insert(n.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("node ", n.id, " is listed twice"));
    }
  }
  const size_t n = t.nodes.size();
  if (t.distance.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("the distance matrix has ", t.distance.size(), " rows for ", n, " nodes"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.distance[i].size() != n) {
      return absl::InvalidArgumentError(absl::StrCat("distance row ", i, " has ",
                                                     t.distance[i].size(), " entries, not ", n));
    }
    for (size_t j = 0; j < n; ++j) {
      int d = t.distance[i][j];
      if (i == j ? d != 10 : d <= 10) {
        return absl::InvalidArgumentError(absl::StrCat(
            "distance[", i, "][", j, "] = ", d,
            i == j ? ": a node's distance to itself must be 10" : ": must be more than 10"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Topology> ParseTopologyToml(absl::string_view text, absl::string_view source) {
  absl::StatusOr<toml::table> parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  toml::table& root = *parsed;
  Topology t;
  const toml::array* nodes = root.get_as<toml::array>("node");
  if (nodes == nullptr) return Bad(source, "needs [[node]] tables");
  for (size_t i = 0; i < nodes->size(); ++i) {
    const toml::table* node = (*nodes)[i].as_table();
    std::string where = absl::StrCat("[[node]] #", i + 1);
    if (node == nullptr) return Bad(source, absl::StrCat(where, " must be a table"));
    NumaNode n;
    auto id = (*node)["id"].value<int64_t>();
    if (!id || *id < 0) return Bad(source, absl::StrCat(where, " needs id = N (N >= 0)"));
    n.id = static_cast<int>(*id);
    if (auto cpus = (*node)["cpus"].value<std::string>()) {
      absl::StatusOr<std::vector<int>> list = ParseCpuList(*cpus);
      if (!list.ok()) return Bad(source, absl::StrCat(where, ": ", list.status().message()));
      n.cpus = *std::move(list);
    } else if (node->contains("cpus")) {
      return Bad(source, absl::StrCat(where, ": cpus must be a CPU list string like \"0-3\""));
    }
    absl::StatusOr<uint64_t> memory = SizeField(*node, "memory", where, source);
    if (!memory.ok()) return memory.status();
    n.memory_bytes = *memory;
    n.free_bytes = n.memory_bytes;
    if (node->contains("free")) {
      absl::StatusOr<uint64_t> free = SizeField(*node, "free", where, source);
      if (!free.ok()) return free.status();
      n.free_bytes = *free;
    }
    t.nodes.push_back(std::move(n));
  }
  const toml::array* matrix = root["distances"]["matrix"].as_array();
  if (matrix == nullptr) {
    // Two levels only: 10 local, 20 remote.
    t.distance.assign(t.nodes.size(), std::vector<int>(t.nodes.size(), 20));
    for (size_t i = 0; i < t.nodes.size(); ++i) t.distance[i][i] = 10;
  } else {
    for (const toml::node& row : *matrix) {
      const toml::array* r = row.as_array();
      if (r == nullptr) return Bad(source, "distances.matrix must be an array of arrays");
      std::vector<int> out;
      for (const toml::node& v : *r) {
        auto d = v.value<int64_t>();
        if (!d) return Bad(source, "distances must be integers");
        out.push_back(static_cast<int>(*d));
      }
      t.distance.push_back(std::move(out));
    }
  }
  if (absl::Status s = ValidateTopology(t); !s.ok()) return Bad(source, s.message());
  return t;
}

absl::StatusOr<Topology> LoadTopologyFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("topology ", path, ": cannot open file"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseTopologyToml(ss.str(), path);
}

}  // namespace numavm
