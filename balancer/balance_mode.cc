#include "balancer/balance_mode.h"

#include "absl/strings/str_cat.h"

namespace numavm {

absl::StatusOr<BalanceMode> ParseBalanceMode(absl::string_view name) {
  if (name == "off") return BalanceMode::kOff;
  if (name == "advise") return BalanceMode::kAdvise;
  if (name == "on") return BalanceMode::kOn;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown balance mode '", name, "' (want off, advise or on)"));
}

absl::string_view BalanceModeName(BalanceMode mode) {
  switch (mode) {
    case BalanceMode::kOff:
      return "off";
    case BalanceMode::kAdvise:
      return "advise";
    case BalanceMode::kOn:
      return "on";
  }
  return "?";
}

}  // namespace numavm
