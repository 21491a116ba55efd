#include "base/size.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace numavm {

absl::StatusOr<uint64_t> ParseSize(absl::string_view text) {
  absl::string_view s = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) {
    ++digits;
  }
  uint64_t value = 0;
  if (digits == 0 || !absl::SimpleAtoi(s.substr(0, digits), &value)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a size (try 512M or 4G)"));
  }
  std::string suffix = absl::AsciiStrToUpper(s.substr(digits));
  int shift = -1;
  if (suffix.empty() || suffix == "B") shift = 0;
  for (auto [letter, bits] : {std::pair{'K', 10}, {'M', 20}, {'G', 30}, {'T', 40}}) {
    if (suffix == std::string(1, letter) || suffix == absl::StrCat(std::string(1, letter), "B") ||
        suffix == absl::StrCat(std::string(1, letter), "IB")) {
      shift = bits;
    }
  }
  if (shift < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' has an unknown size suffix (use K, M, G or T)"));
  }
  if (shift > 0 && value > (~0ull >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is too large"));
  }
  return value << shift;
}

std::string FormatSize(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  uint64_t v = bytes;
  while (unit < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++unit;
  }
  if (v < 1024) return absl::StrCat(v, " ", units[unit]);
  double d = static_cast<double>(bytes);
  unit = 0;
  while (unit < 4 && d >= 1024) {
    d /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", d, units[unit]);
}

}  // namespace numavm
