#include "runtime/runtime.h"

#include <stdarg.h>
#include <stddef.h>

#include "runtime/exceptions.h"

namespace guest {
namespace {

using numavm::abi::BootInfo;
using numavm::abi::Mailbox;

inline void OutB(uint16_t port, uint8_t value) {
  __asm__ volatile("outb %0, %1" ::"a"(value), "Nd"(port) : "memory");
}
inline void OutL(uint16_t port, uint32_t value) {
  __asm__ volatile("outl %0, %1" ::"a"(value), "Nd"(port) : "memory");
}

// Set once per vCPU at entry; each vCPU has its own stack, so keep the index
// in a per-vCPU slot found through the stack pointer's region.
Mailbox* MyMailbox() {
  uint64_t rsp;
  __asm__ volatile("mov %%rsp, %0" : "=r"(rsp));
  uint64_t index = (rsp - numavm::abi::kStackBase) / numavm::abi::kStackBytes;
  return reinterpret_cast<Mailbox*>(numavm::abi::kMailboxBase + index * numavm::abi::kMailboxBytes);
}

const BootInfo* Boot() { return reinterpret_cast<const BootInfo*>(numavm::abi::kBootInfoAddress); }

void CopyText(char* dst, const char* src, size_t capacity) {
  size_t i = 0;
  for (; src[i] != '\0' && i + 1 < capacity; ++i) dst[i] = src[i];
  dst[i] = '\0';
}

void PrintUnsigned(uint64_t v, unsigned base) {
  char buf[24];
  int n = 0;
  do {
    unsigned digit = v % base;
    buf[n++] = static_cast<char>(digit < 10 ? '0' + digit : 'a' + digit - 10);
    v /= base;
  } while (v != 0);
  while (n > 0) Putc(buf[--n]);
}

bool KeyMatches(const char* at, const char* key) {
  while (*key != '\0') {
    if (*at++ != *key++) return false;
  }
  return *at == '=';
}

}  // namespace

void Putc(char c) { OutB(numavm::abi::kPortConsole, static_cast<uint8_t>(c)); }

void Print(const char* s) {
  while (*s != '\0') Putc(*s++);
}

void Printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  for (const char* p = fmt; *p != '\0'; ++p) {
    if (*p != '%') {
      Putc(*p);
      continue;
    }
    ++p;
    int longs = 0;
    while (*p == 'l') {
      ++longs;
      ++p;
    }
    switch (*p) {
      case 's':
        Print(va_arg(ap, const char*));
        break;
      case 'c':
        Putc(static_cast<char>(va_arg(ap, int)));
        break;
      case 'd': {
        int64_t v = longs ? va_arg(ap, int64_t) : va_arg(ap, int);
        if (v < 0) {
          Putc('-');
          v = -v;
        }
        PrintUnsigned(static_cast<uint64_t>(v), 10);
        break;
      }
      case 'u':
        PrintUnsigned(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 10);
        break;
      case 'x':
        PrintUnsigned(longs ? va_arg(ap, uint64_t) : va_arg(ap, unsigned), 16);
        break;
      case '%':
        Putc('%');
        break;
      case '\0':
        --p;
        break;
      default:
        Putc('?');
    }
  }
  va_end(ap);
}

void Progress(uint64_t cumulative_bytes) {
  MyMailbox()->u64[0] = cumulative_bytes;
  OutL(numavm::abi::kPortProgress, 0);
}

void Phase(const char* name) {
  CopyText(MyMailbox()->text, name, sizeof(Mailbox::text));
  OutL(numavm::abi::kPortPhase, 0);
}

void Result(const char* key, uint64_t value) {
  Mailbox* box = MyMailbox();
  CopyText(box->text, key, sizeof(Mailbox::text));
  box->u64[0] = value;
  OutL(numavm::abi::kPortResult, 0);
}

void Layout(uint64_t gpa, uint64_t bytes, uint64_t vcpu_mask) {
  Mailbox* box = MyMailbox();
  box->u64[0] = gpa;
  box->u64[1] = bytes;
  box->u64[2] = vcpu_mask;
  OutL(numavm::abi::kPortLayout, 0);
}

void SleepMicros(uint64_t micros) {
  MyMailbox()->u64[0] = micros;
  OutL(numavm::abi::kPortSleep, 0);
}

void Exit(uint32_t status) {
  for (;;) OutL(numavm::abi::kPortExit, status);
}

uint64_t ArgU64(const char* key, uint64_t fallback) {
  const char* args = Boot()->args;
  for (const char* p = args; *p != '\0'; ++p) {
    if ((p != args && p[-1] != ' ') || !KeyMatches(p, key)) continue;
    while (*p != '=') ++p;
    ++p;
    uint64_t v = 0;
    bool any = false;
    while (*p >= '0' && *p <= '9') {
      v = v * 10 + static_cast<uint64_t>(*p++ - '0');
      any = true;
    }
    if (!any) return fallback;
    switch (*p) {
      case 'K':
      case 'k':
        return v << 10;
      case 'M':
      case 'm':
        return v << 20;
      case 'G':
      case 'g':
        return v << 30;
      default:
        return v;
    }
  }
  return fallback;
}

Deadline::Deadline(const Env& env, uint64_t seconds) {
  if (seconds != 0) {
    end_tsc_ = ReadTsc() + seconds * env.boot->tsc_khz * 1000ull;
  }
}

bool Deadline::Passed() const { return end_tsc_ != 0 && ReadTsc() >= end_tsc_; }

void Barrier::Wait(uint32_t parties) {
  uint32_t generation = __atomic_load_n(&generation_, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&arrived_, 1, __ATOMIC_ACQ_REL) == parties) {
    __atomic_store_n(&arrived_, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&generation_, 1, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n(&generation_, __ATOMIC_ACQUIRE) == generation) {
    CpuRelax();
  }
}

}  // namespace guest

// The compiler may emit calls to these even in freestanding code.
extern "C" void* memset(void* dst, int value, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<unsigned char>(value);
  return dst;
}

extern "C" void* memcpy(void* dst, const void* src, size_t n) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
  return dst;
}

extern "C" [[noreturn]] void RuntimeEntry(uint64_t vcpu, const numavm::abi::BootInfo* boot) {
  guest::InstallExceptionHandlers(static_cast<uint32_t>(vcpu));
  __asm__ volatile("outl %0, %1" ::"a"(0u), "Nd"(numavm::abi::kPortStarted));
  guest::Env env{static_cast<uint32_t>(vcpu), boot->vcpu_count, boot, boot->heap_start,
                 boot->heap_end};
  guest::Exit(static_cast<uint32_t>(WorkloadMain(env)));
}
