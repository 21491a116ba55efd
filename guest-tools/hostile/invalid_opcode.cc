// Hostile: raises #UD; the runtime's handler reports it.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  __asm__ volatile("ud2");
  return 0;
}
