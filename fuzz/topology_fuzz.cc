// Any bytes as a topology file.
#include <cstddef>
#include <cstdint>

#include "balancer/topology/topology_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)numavm::ParseTopologyToml(absl::string_view(reinterpret_cast<const char*>(data), size),
                                  "fuzz");
  return 0;
}
