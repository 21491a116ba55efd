// Hostile: calls with an unterminated phase name and a layout outside RAM.
#include "runtime/runtime.h"

int WorkloadMain(const guest::Env& env) {
  auto* box = reinterpret_cast<numavm::abi::Mailbox*>(numavm::abi::kMailboxBase +
                                                      env.vcpu * numavm::abi::kMailboxBytes);
  for (char& c : box->text) c = 'X';
  __asm__ volatile("outl %0, %1" ::"a"(0u), "Nd"(uint16_t{numavm::abi::kPortPhase}));
  guest::Layout(~0ull - 4096, 1ull << 40, ~0ull);
  return 0;
}
