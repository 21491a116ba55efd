// Any bytes as a `numavm daemon --config` file.
#include <cstddef>
#include <cstdint>

#include "cli/daemon_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  numavm::DaemonConfig config;
  (void)numavm::ApplyDaemonToml(absl::string_view(reinterpret_cast<const char*>(data), size),
                                "fuzz", config);
  return 0;
}
