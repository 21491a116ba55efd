#include "base/toml.h"

#include <string>

#include "absl/strings/str_cat.h"

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

}  // namespace numavm
