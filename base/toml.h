// TOML text to a table, with parse errors as one-line Statuses that name the
// source, line and column.
#ifndef NUMAVM_BASE_TOML_H_
#define NUMAVM_BASE_TOML_H_

#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

absl::StatusOr<toml::table> ParseToml(absl::string_view text, absl::string_view source);

// An error naming the first key of `table` not in `allowed`, e.g.
// "cfg.toml: unknown key 'x' in [vm] (allowed: a, b)".
absl::Status CheckTomlKeys(const toml::table& table, const std::set<std::string>& allowed,
                           absl::string_view where, absl::string_view source);

// "<source>:<line>: <what>", the line where `node` is written ("<source>:
// <what>" when toml++ does not know it).
absl::Status TomlError(const toml::node& node, absl::string_view what, absl::string_view source);

// Typed values of `key` in `table`, named `name` (e.g. "vm.vcpus") in errors:
// absent gives nullopt; another type, or an integer outside [min, max], is
// an error naming the key, the file and the line.
absl::StatusOr<std::optional<std::string>> TomlString(const toml::table& table, const char* key,
                                                      absl::string_view name,
                                                      absl::string_view source);
absl::StatusOr<std::optional<int64_t>> TomlInt(const toml::table& table, const char* key,
                                               int64_t min, int64_t max, absl::string_view name,
                                               absl::string_view source);
// A table under `key`: absent gives nullptr; another type is an error.
absl::StatusOr<const toml::table*> TomlTable(const toml::table& table, const char* key,
                                             absl::string_view source);

}  // namespace numavm

#endif  // NUMAVM_BASE_TOML_H_
