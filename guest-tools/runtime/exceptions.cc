#include "runtime/exceptions.h"

#include "vmm/guest_abi.h"

extern "C" const uint64_t kExceptionStubs[32];

namespace guest {
namespace {

using numavm::abi::kMaxVcpus;

constexpr uint64_t kExceptionStackBytes = 4096;
constexpr uint16_t kCodeSelector = 0x08;  // as in the VMM's GDT (x86_boot.cc)
constexpr uint32_t kFirstTssEntry = 3;    // after null, code, data

struct __attribute__((packed)) Tss {
  uint32_t reserved0;
  uint64_t rsp[3];
  uint64_t reserved1;
  uint64_t ist[7];
  uint64_t reserved2;
  uint16_t reserved3;
  uint16_t io_map_base;
};
static_assert(sizeof(Tss) == 104);

struct __attribute__((packed)) IdtGate {
  uint16_t offset_low;
  uint16_t selector;
  uint8_t ist;
  uint8_t type;  // present, DPL 0, 64-bit interrupt gate
  uint16_t offset_mid;
  uint32_t offset_high;
  uint32_t reserved;
};
static_assert(sizeof(IdtGate) == 16);

struct __attribute__((packed)) TableRegister {
  uint16_t limit;
  uint64_t base;
};

// The VMM's three descriptors, then a 16-byte TSS descriptor per vCPU: a TSS
// is marked busy when loaded, so vCPUs cannot share one.
uint64_t gdt[kFirstTssEntry + 2 * kMaxVcpus] __attribute__((aligned(16)));
IdtGate idt[32] __attribute__((aligned(16)));
Tss tss[kMaxVcpus] __attribute__((aligned(16)));
uint8_t exception_stacks[kMaxVcpus][kExceptionStackBytes] __attribute__((aligned(16)));

void SetTssDescriptor(uint32_t vcpu) {
  const uint64_t base = reinterpret_cast<uint64_t>(&tss[vcpu]);
  const uint64_t limit = sizeof(Tss) - 1;
  const uint64_t kAvailableTss64 = 0x9, kPresent = 1ull << 47;
  gdt[kFirstTssEntry + 2 * vcpu] = (limit & 0xffff) | ((base & 0xffffff) << 16) |
                                   (kAvailableTss64 << 40) | kPresent |
                                   (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
  gdt[kFirstTssEntry + 2 * vcpu + 1] = base >> 32;
}

}  // namespace

void InstallExceptionHandlers(uint32_t vcpu) {
  if (vcpu >= kMaxVcpus) return;
  // Every vCPU writes the same shared entries: no ordering is needed.
  const auto* vmm_gdt = reinterpret_cast<const uint64_t*>(numavm::abi::kGdtAddress);
  for (uint32_t i = 0; i < kFirstTssEntry; ++i) gdt[i] = vmm_gdt[i];
  for (uint32_t v = 0; v < 32; ++v) {
    const uint64_t at = kExceptionStubs[v];
    idt[v] = IdtGate{static_cast<uint16_t>(at),
                     kCodeSelector,
                     1,
                     0x8e,
                     static_cast<uint16_t>(at >> 16),
                     static_cast<uint32_t>(at >> 32),
                     0};
  }
  tss[vcpu].ist[0] = reinterpret_cast<uint64_t>(&exception_stacks[vcpu][0]) + kExceptionStackBytes;
  tss[vcpu].io_map_base = sizeof(Tss);
  SetTssDescriptor(vcpu);

  // The code and data selectors keep their values, so the segment registers
  // need no reload after lgdt.
  const TableRegister gdtr{sizeof(gdt) - 1, reinterpret_cast<uint64_t>(gdt)};
  const TableRegister idtr{sizeof(idt) - 1, reinterpret_cast<uint64_t>(idt)};
  const uint16_t tss_selector = static_cast<uint16_t>((kFirstTssEntry + 2 * vcpu) << 3);
  __asm__ volatile("lgdt %0" ::"m"(gdtr) : "memory");
  __asm__ volatile("ltr %0" ::"r"(tss_selector) : "memory");
  __asm__ volatile("lidt %0" ::"m"(idtr) : "memory");
}

}  // namespace guest

// Called by ExceptionCommon on the vCPU's exception stack, which tells which
// vCPU this is (the interrupted rsp may be anything).
extern "C" [[noreturn]] void ReportException(uint64_t vector, uint64_t error, uint64_t rip,
                                             uint64_t cr2, uint64_t rsp) {
  uint64_t here;
  __asm__ volatile("mov %%rsp, %0" : "=r"(here));
  const uint64_t vcpu =
      (here - reinterpret_cast<uint64_t>(guest::exception_stacks)) / guest::kExceptionStackBytes;
  auto* box = reinterpret_cast<numavm::abi::Mailbox*>(numavm::abi::kMailboxBase +
                                                      vcpu * numavm::abi::kMailboxBytes);
  box->u64[0] = error;
  box->u64[1] = rip;
  box->u64[2] = cr2;
  box->u64[3] = rsp;
  for (;;) {
    __asm__ volatile("outl %0, %1" ::"a"(static_cast<uint32_t>(vector)),
                     "Nd"(numavm::abi::kPortException)
                     : "memory");
  }
}
