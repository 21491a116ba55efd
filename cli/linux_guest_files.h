// The files of `numavm run --kernel`: the kernel and initrd read whole
// (regular files only, bounded), with the command line.
#ifndef NUMAVM_CLI_LINUX_GUEST_FILES_H_
#define NUMAVM_CLI_LINUX_GUEST_FILES_H_

#include "absl/status/statusor.h"
#include "cli/run_options.h"
#include "vmm/virtual_machine.h"

namespace numavm {

inline constexpr uint64_t kMaxKernelFileBytes = 256ull << 20;
inline constexpr uint64_t kMaxInitrdFileBytes = 2ull << 30;

absl::StatusOr<LinuxGuest> ReadLinuxGuest(const RunOptions& options);

}  // namespace numavm

#endif  // NUMAVM_CLI_LINUX_GUEST_FILES_H_
