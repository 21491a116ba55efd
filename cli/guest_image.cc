#include "cli/guest_image.h"

#include <unistd.h>

#include "base/read_file.h"
#include "cli/payload_path.h"
#include "vmm/linux_boot.h"

namespace numavm {
namespace {

absl::StatusOr<std::vector<uint8_t>> ReadWhole(const std::string& path, absl::string_view what,
                                               uint64_t max_bytes) {
  absl::StatusOr<RegularFile> file = RegularFile::Open(path, what, max_bytes);
  if (!file.ok()) return file.status();
  std::vector<uint8_t> bytes(file->size());
  if (absl::Status s = file->ReadAt(0, bytes.size(), bytes.data()); !s.ok()) return s;
  return bytes;
}

absl::StatusOr<LinuxGuest> ReadLinuxGuest(const RunOptions& options) {
  LinuxGuest guest;
  guest.kernel_name = options.kernel;
  guest.cmdline = options.append;
  absl::StatusOr<std::vector<uint8_t>> kernel =
      ReadWhole(options.kernel, "kernel", kMaxKernelFileBytes);
  if (!kernel.ok()) return kernel.status();
  guest.kernel = *std::move(kernel);
  if (!options.initrd.empty()) {
    absl::StatusOr<std::vector<uint8_t>> initrd =
        ReadWhole(options.initrd, "initrd", kMaxInitrdFileBytes);
    if (!initrd.ok()) return initrd.status();
    guest.initrd = *std::move(initrd);
  }
  return guest;
}

}  // namespace

absl::Status CheckKernelFile(const RunOptions& options) {
  if (options.kernel.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<uint8_t>> kernel =
      ReadWhole(options.kernel, "kernel", kMaxKernelFileBytes);
  if (!kernel.ok()) return kernel.status();
  return ParseLinuxKernel(*kernel, options.kernel).status();
}

absl::StatusOr<GuestImage> ReadGuestImage(const RunOptions& options) {
  GuestImage image;
  if (!options.kernel.empty()) {
    absl::StatusOr<LinuxGuest> guest = ReadLinuxGuest(options);
    if (!guest.ok()) return guest.status();
    image.linux_guest = *std::move(guest);
    return image;
  }
  absl::StatusOr<std::string> path = ResolvePayload(options.payload);
  if (!path.ok()) return path.status();
  absl::StatusOr<ElfPayload> elf = ReadElfPayload(*path);
  if (!elf.ok()) return elf.status();
  image.payload = *std::move(elf);
  return image;
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> CreateVirtualMachine(const VmConfig& config,
                                                                     const GuestImage& image,
                                                                     GuestObserver* observer) {
  if (image.linux_guest) {
    // What is typed on numavm's terminal goes to the guest's console
    // (vmm/console_input.h) - when stdin is a terminal and the console is
    // shown at all.
    VmConfig linux_config = config;
    if (linux_config.echo_console && ::isatty(STDIN_FILENO)) {
      linux_config.console_input_fd = STDIN_FILENO;
    }
    return VirtualMachine::Create(linux_config, *image.linux_guest, observer);
  }
  return VirtualMachine::Create(config, *image.payload, observer);
}

}  // namespace numavm
