// Any bytes as a payload file.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "vmm/elf_payload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)numavm::ParseElfPayload("fuzz", std::vector<uint8_t>(data, data + size));
  return 0;
}
