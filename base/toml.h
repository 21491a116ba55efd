// TOML text to a table, with parse errors as one-line Statuses that name the
// source, line and column.
#ifndef NUMAVM_BASE_TOML_H_
#define NUMAVM_BASE_TOML_H_

#include <toml++/toml.h>

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

}  // namespace numavm

#endif  // NUMAVM_BASE_TOML_H_
