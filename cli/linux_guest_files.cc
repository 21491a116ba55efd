#include "cli/linux_guest_files.h"

#include "base/read_file.h"

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

}  // namespace

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

}  // namespace numavm
