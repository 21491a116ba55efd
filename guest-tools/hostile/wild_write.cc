// Hostile: writes past the end of guest RAM (the page tables map it; no
// memory slot backs it).
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env& env) {
  volatile uint64_t* wild =
      reinterpret_cast<volatile uint64_t*>(env.boot->ram_bytes + (16ull << 20));
  *wild = 0x5a5a5a5a5a5a5a5aull;
  return 0;
}
