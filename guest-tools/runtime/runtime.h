// The guest runtime: what every guest-tools payload may call.
#ifndef NUMAVM_GUEST_TOOLS_RUNTIME_RUNTIME_H_
#define NUMAVM_GUEST_TOOLS_RUNTIME_RUNTIME_H_

#include <stdint.h>

#include "vmm/guest_abi.h"

namespace guest {

struct Env {
  uint32_t vcpu;   // this vCPU's index
  uint32_t vcpus;  // vCPUs in the VM
  const numavm::abi::BootInfo* boot;
  uint64_t heap_start;  // free guest memory [heap_start, heap_end)
  uint64_t heap_end;
};

// Console output; Printf knows %s %c %d %u %x %lu %lx %ld %llu %llx and %%.
void Putc(char c);
void Print(const char* s);
void Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Calls into the VMM.
void Progress(uint64_t cumulative_bytes);
void Phase(const char* name);
void Result(const char* key, uint64_t value);
void Layout(uint64_t gpa, uint64_t bytes, uint64_t vcpu_mask);
void SleepMicros(uint64_t micros);
[[noreturn]] void Exit(uint32_t status);

// Payload arguments from BootInfo.args ("key=value ..."); sizes take K/M/G.
uint64_t ArgU64(const char* key, uint64_t fallback);

// Time-bounded loops: `seconds` of guest time measured with the TSC; 0 means
// no bound.
class Deadline {
 public:
  Deadline(const Env& env, uint64_t seconds);
  bool Passed() const;

 private:
  uint64_t end_tsc_ = 0;
};

// Spinning barrier across `parties` vCPUs; reusable.
class Barrier {
 public:
  void Wait(uint32_t parties);

 private:
  volatile uint32_t arrived_ = 0;
  volatile uint32_t generation_ = 0;
};

inline void CpuRelax() { __asm__ volatile("pause" ::: "memory"); }

inline uint64_t ReadTsc() {
  uint32_t lo, hi;
  __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

}  // namespace guest

// Each payload defines this; its return value is the vCPU's exit status.
int WorkloadMain(const guest::Env& env);

#endif  // NUMAVM_GUEST_TOOLS_RUNTIME_RUNTIME_H_
