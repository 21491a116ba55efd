#include "base/toml.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace numavm {

absl::StatusOr<toml::table> ParseToml(absl::string_view text, absl::string_view source) {
  try {
    return toml::parse(std::string_view(text.data(), text.size()),
                       std::string_view(source.data(), source.size()));
  } catch (const toml::parse_error& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": line ", e.source().begin.line,
                                                   ", column ", e.source().begin.column, ": ",
                                                   std::string(e.description())));
  }
}

absl::Status CheckTomlKeys(const toml::table& table, const std::set<std::string>& allowed,
                           absl::string_view where, absl::string_view source) {
  for (const auto& [key, value] : table) {
    if (!allowed.count(std::string(key.str()))) {
      return TomlError(value,
                       absl::StrCat("unknown key '", std::string(key.str()), "' in ", where,
                                    " (allowed: ", absl::StrJoin(allowed, ", "), ")"),
                       source);
    }
  }
  return absl::OkStatus();
}

absl::Status TomlError(const toml::node& node, absl::string_view what, absl::string_view source) {
  const toml::source_region& where = node.source();
  if (where.begin.line == 0) return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
  return absl::InvalidArgumentError(absl::StrCat(source, ":", where.begin.line, ": ", what));
}

absl::StatusOr<std::optional<std::string>> TomlString(const toml::table& table, const char* key,
                                                      absl::string_view name,
                                                      absl::string_view source) {
  const toml::node* n = table.get(key);
  if (n == nullptr) return std::optional<std::string>();
  std::optional<std::string> v = n->value<std::string>();
  if (!v || !n->is_string()) return TomlError(*n, absl::StrCat(name, " must be a string"), source);
  return v;
}

absl::StatusOr<std::optional<int64_t>> TomlInt(const toml::table& table, const char* key,
                                               int64_t min, int64_t max, absl::string_view name,
                                               absl::string_view source) {
  const toml::node* n = table.get(key);
  if (n == nullptr) return std::optional<int64_t>();
  if (!n->is_integer()) return TomlError(*n, absl::StrCat(name, " must be an integer"), source);
  const int64_t v = **n->as_integer();
  if (v < min || v > max) {
    return TomlError(*n, absl::StrCat(name, " = ", v, ": want ", min, "-", max), source);
  }
  return std::optional<int64_t>(v);
}

absl::StatusOr<const toml::table*> TomlTable(const toml::table& table, const char* key,
                                             absl::string_view source) {
  const toml::node* n = table.get(key);
  if (n == nullptr) return static_cast<const toml::table*>(nullptr);
  if (!n->is_table())
    return TomlError(*n, absl::StrCat(key, " must be a table ([", key, "])"), source);
  return n->as_table();
}

}  // namespace numavm
