// `numavm run`: boot a payload on the bundled VMM and report on it.
#ifndef NUMAVM_CLI_RUN_COMMAND_H_
#define NUMAVM_CLI_RUN_COMMAND_H_

#include "cli/run_options.h"

namespace numavm {

// Returns the process exit status (see exit_codes.h). Errors before the VM
// runs are printed as one line on stderr.
int RunCommand(const RunFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_RUN_COMMAND_H_
