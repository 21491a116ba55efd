// Any bytes as a control-socket reply to "report".
#include <cstddef>
#include <cstdint>
#include <string>

#include "balancer/control/control_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)numavm::ParsePeerReport(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
