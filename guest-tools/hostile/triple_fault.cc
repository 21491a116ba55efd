// Hostile: raises #UD with no IDT; the double fault escalates to a triple
// fault (shutdown).
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  __asm__ volatile("ud2");
  return 0;
}
