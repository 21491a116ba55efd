#include "balancer/topology/topology_file.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/size.h"
#include "base/toml.h"

namespace numavm {
namespace {

constexpr int64_t kMaxNodeId = 1023;  // Linux's MAX_NUMNODES
constexpr int kMaxDistance = 255;     // an ACPI SLIT entry is one byte

absl::Status Bad(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

absl::StatusOr<uint64_t> SizeField(const toml::table& t, const char* key, absl::string_view where,
                                   absl::string_view source) {
  absl::StatusOr<std::optional<std::string>> text =
      TomlString(t, key, absl::StrCat(where, ": ", key), source);
  if (!text.ok()) return text.status();
  if (!*text) return Bad(source, absl::StrCat(where, ": ", key, " must be a size like \"16G\""));
  absl::StatusOr<uint64_t> bytes = ParseSize(**text);
  if (!bytes.ok())
    return TomlError(*t.get(key), absl::StrCat(where, ": ", bytes.status().message()), source);
  return *bytes;
}

}  // namespace

absl::Status ValidateTopology(const Topology& t) {
  if (t.nodes.empty()) return absl::InvalidArgumentError("a topology needs at least one node");
  std::set<int> ids;
  std::set<int> cpus;
  for (const NumaNode& n : t.nodes) {
    if (!ids.insert(n.id).second) {
      return absl::InvalidArgumentError(absl::StrCat("node ", n.id, " is listed twice"));
    }
    for (int c : n.cpus) {
      if (!cpus.insert(c).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("CPU ", c, " is in more than one node (node ", n.id, " again)"));
      }
    }
  }
  const size_t n = t.nodes.size();
  if (t.distance.size() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("the distance matrix has ", t.distance.size(), " rows for ", n, " nodes"));
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.distance[i].size() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("distance row ", i, " has ", t.distance[i].size(), " entries, not ", n));
    }
    for (size_t j = 0; j < n; ++j) {
      int d = t.distance[i][j];
      if (i == j ? d != 10 : (d <= 10 || d > kMaxDistance)) {
        return absl::InvalidArgumentError(
            absl::StrCat("distance[", i, "][", j, "] = ", d,
                         i == j ? ": a node's distance to itself must be 10"
                                : absl::StrCat(": must be 11-", kMaxDistance)));
      }
      if (t.distance[j].size() == n && d != t.distance[j][i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("distance[", i, "][", j, "] = ", d, " but distance[", j, "][", i,
                         "] = ", t.distance[j][i], ": the matrix must be symmetric"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Topology> ParseTopologyToml(absl::string_view text, absl::string_view source) {
  absl::StatusOr<toml::table> parsed = ParseToml(text, source);
  if (!parsed.ok()) return parsed.status();
  const toml::table& root = *parsed;
  if (absl::Status s = CheckTomlKeys(root, {"node", "distances"}, "the top level", source);
      !s.ok()) {
    return s;
  }
  Topology t;
  const toml::node* node_list = root.get("node");
  if (node_list == nullptr) return Bad(source, "needs [[node]] tables");
  const toml::array* nodes = node_list->as_array();
  if (nodes == nullptr) return TomlError(*node_list, "node must be [[node]] tables", source);
  for (size_t i = 0; i < nodes->size(); ++i) {
    const toml::table* node = (*nodes)[i].as_table();
    std::string where = absl::StrCat("[[node]] #", i + 1);
    if (node == nullptr)
      return TomlError((*nodes)[i], absl::StrCat(where, " must be a table"), source);
    if (absl::Status s = CheckTomlKeys(*node, {"id", "cpus", "memory", "free"}, where, source);
        !s.ok()) {
      return s;
    }
    NumaNode n;
    absl::StatusOr<std::optional<int64_t>> id =
        TomlInt(*node, "id", 0, kMaxNodeId, absl::StrCat(where, ": id"), source);
    if (!id.ok()) return id.status();
    if (!*id) return Bad(source, absl::StrCat(where, " needs id = N (0-", kMaxNodeId, ")"));
    n.id = static_cast<int>(**id);
    absl::StatusOr<std::optional<std::string>> cpus =
        TomlString(*node, "cpus", absl::StrCat(where, ": cpus (a CPU list like \"0-3\")"), source);
    if (!cpus.ok()) return cpus.status();
    if (*cpus) {
      absl::StatusOr<std::vector<int>> list = ParseCpuList(**cpus);
      if (!list.ok())
        return TomlError(*node->get("cpus"), absl::StrCat(where, ": ", list.status().message()),
                         source);
      n.cpus = *std::move(list);
    }
    absl::StatusOr<uint64_t> memory = SizeField(*node, "memory", where, source);
    if (!memory.ok()) return memory.status();
    if (*memory == 0) {
      return TomlError(*node->get("memory"),
                       absl::StrCat(where,
                                    ": memory must be more than 0 (leave a memory-less "
                                    "node out and give its CPUs to the nearest node)"),
                       source);
    }
    n.memory_bytes = *memory;
    n.free_bytes = n.memory_bytes;
    if (node->contains("free")) {
      absl::StatusOr<uint64_t> free = SizeField(*node, "free", where, source);
      if (!free.ok()) return free.status();
      if (*free > n.memory_bytes) {
        return TomlError(*node->get("free"), absl::StrCat(where, ": free is more than memory"),
                         source);
      }
      n.free_bytes = *free;
    }
    t.nodes.push_back(std::move(n));
  }
  absl::StatusOr<const toml::table*> distances = TomlTable(root, "distances", source);
  if (!distances.ok()) return distances.status();
  const toml::array* matrix = nullptr;
  if (*distances != nullptr) {
    if (absl::Status s = CheckTomlKeys(**distances, {"matrix"}, "[distances]", source); !s.ok()) {
      return s;
    }
    const toml::node* m = (*distances)->get("matrix");
    if (m == nullptr)
      return TomlError(**distances, "[distances] needs matrix = [[...], ...]", source);
    matrix = m->as_array();
    if (matrix == nullptr)
      return TomlError(*m, "distances.matrix must be an array of arrays", source);
  }
  if (matrix == nullptr) {
    // Two levels only: 10 local, 20 remote.
    t.distance.assign(t.nodes.size(), std::vector<int>(t.nodes.size(), 20));
    for (size_t i = 0; i < t.nodes.size(); ++i) t.distance[i][i] = 10;
  } else {
    for (const toml::node& row : *matrix) {
      const toml::array* r = row.as_array();
      if (r == nullptr)
        return TomlError(row, "distances.matrix must be an array of arrays", source);
      std::vector<int> out;
      for (const toml::node& v : *r) {
        if (!v.is_integer() || **v.as_integer() < 0 || **v.as_integer() > kMaxDistance) {
          return TomlError(v, absl::StrCat("distances must be integers 10-", kMaxDistance), source);
        }
        out.push_back(static_cast<int>(**v.as_integer()));
      }
      t.distance.push_back(std::move(out));
    }
  }
  if (absl::Status s = ValidateTopology(t); !s.ok()) return Bad(source, s.message());
  return t;
}

absl::StatusOr<Topology> LoadTopologyFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadRegularFile(path, "topology");
  if (!text.ok()) return text.status();
  return ParseTopologyToml(*text, path);
}

}  // namespace numavm
