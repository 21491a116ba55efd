// Hostile: never stops and never calls the VMM.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  for (;;) guest::CpuRelax();
}
