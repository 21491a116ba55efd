// Hostile: points rsp at unmapped memory and pushes. The #PF cannot be
// delivered on that stack; the runtime's handlers run on their own stack
// (IST) and still report it.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  __asm__ volatile("movabs $0x8000001000, %%rsp\n\tpushq $0" ::: "memory");
  return 0;
}
