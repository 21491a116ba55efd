// Hostile: throws away the runtime's IDT and raises #UD; with no handler the
// double fault escalates to a triple fault (shutdown).
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env&) {
  struct __attribute__((packed)) {
    uint16_t limit;
    uint64_t base;
  } empty{0, 0};
  __asm__ volatile("lidt %0\n\tud2" ::"m"(empty));
  return 0;
}
