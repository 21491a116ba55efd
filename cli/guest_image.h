// What `numavm run` boots: a guest-tools payload (an ELF file) or, with
// --kernel, a Linux kernel with its initrd (read whole: regular files
// only, bounded) and command line.
#ifndef NUMAVM_CLI_GUEST_IMAGE_H_
#define NUMAVM_CLI_GUEST_IMAGE_H_

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "cli/run_options.h"
#include "vmm/elf_payload.h"
#include "vmm/guest_observer.h"
#include "vmm/virtual_machine.h"

namespace numavm {

inline constexpr uint64_t kMaxKernelFileBytes = 256ull << 20;
inline constexpr uint64_t kMaxInitrdFileBytes = 2ull << 30;

struct GuestImage {
  std::optional<ElfPayload> payload;
  std::optional<LinuxGuest> linux_guest;
};

// Errors are the user's input (exit 2).
absl::StatusOr<GuestImage> ReadGuestImage(const RunOptions& options);

// Whether --kernel names a Linux kernel numavm can boot, read and checked
// before anything needs /dev/kvm, so that a wrong file is the user's error
// (exit 2) on any host. OK without --kernel.
absl::Status CheckKernelFile(const RunOptions& options);

// The VM that boots `image`.
absl::StatusOr<std::unique_ptr<VirtualMachine>> CreateVirtualMachine(const VmConfig& config,
                                                                     const GuestImage& image,
                                                                     GuestObserver* observer);

}  // namespace numavm

#endif  // NUMAVM_CLI_GUEST_IMAGE_H_
