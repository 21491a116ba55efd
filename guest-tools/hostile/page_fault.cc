// Hostile: reads at 512 GiB, beyond what the VMM's page tables map (#PF).
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  volatile uint64_t* far_away = reinterpret_cast<volatile uint64_t*>(512ull << 30);
  return static_cast<int>(*far_away);
}
