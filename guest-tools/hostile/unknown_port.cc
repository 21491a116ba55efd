// Hostile: writes to an I/O port that is not part of the guest ABI.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  __asm__ volatile("outl %0, %1" ::"a"(0xdeadu), "Nd"(uint16_t{0x1234}));
  return 0;
}
