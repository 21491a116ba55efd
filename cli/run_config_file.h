// The TOML config file of `numavm run` ([vm], [payload], [placement],
// [report], [sampling], [[cell]]; see configs/). Unknown keys are errors.
#ifndef NUMAVM_CLI_RUN_CONFIG_FILE_H_
#define NUMAVM_CLI_RUN_CONFIG_FILE_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/run_options.h"

namespace numavm {

// Parses TOML `text` (named `source` in errors) onto `options`.
absl::Status ApplyRunConfig(absl::string_view text, absl::string_view source, RunOptions& options);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_CONFIG_FILE_H_
