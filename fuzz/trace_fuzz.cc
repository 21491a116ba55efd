// Any bytes as a trace file: a trace or a one-line error, never a crash, and
// never an allocation past the trace's own caps.
#include <cstddef>
#include <cstdint>

#include "balancer/replay/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)numavm::ParseTrace(absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  return 0;
}
