// Any bytes as a `numavm run --config` file, then the VM config check.
#include <cstddef>
#include <cstdint>

#include "cli/run_config_file.h"
#include "vmm/vm_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  numavm::RunOptions options;
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  if (numavm::ApplyRunConfig(text, "fuzz", options).ok()) {
    (void)numavm::CheckPayloadArgs(options.vm.payload_args);
    (void)numavm::NormalizeVmConfig(options.vm);
  }
  return 0;
}
