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
    return absl::InvalidArgumentError(
        absl::StrCat(source, ": line ", e.source().begin.line, ", column ",
                     e.source().begin.column, ": ", std::string(e.description())));
  }
}

absl::Status CheckTomlKeys(const toml::table& table, const std::set<std::string>& allowed,
                           absl::string_view where, absl::string_view source) {
  for (const auto& [key, value] : table) {
    if (!allowed.count(std::string(key.str()))) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ": unknown key '", std::string(key.str()), "' in ", where,
                       " (allowed: ", absl::StrJoin(allowed, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

}  // namespace numavm
