// Hostile: prints without end.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  for (;;) guest::Print("flood flood flood flood flood flood flood flood\n");
}
