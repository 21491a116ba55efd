// What a balancer does with what it measures, for every face (run,
// replay, simulate, attach, daemon): off (measure and report only),
// advise (say what it would do, change nothing) or on (act).
#ifndef NUMAVM_BALANCER_BALANCE_MODE_H_
#define NUMAVM_BALANCER_BALANCE_MODE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

enum class BalanceMode { kOff, kAdvise, kOn };

// "off", "advise" or "on"; anything else is InvalidArgument naming the
// three.
absl::StatusOr<BalanceMode> ParseBalanceMode(absl::string_view name);
absl::string_view BalanceModeName(BalanceMode mode);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_BALANCE_MODE_H_
