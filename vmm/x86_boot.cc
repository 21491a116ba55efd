#include "vmm/x86_boot.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {

constexpr uint64_t kGiB = 1ull << 30;
constexpr uint64_t kPresent = 1, kWritable = 2, kAccessed = 0x20, kDirty = 0x40, kHuge = 0x80;
// Every entry is written with its accessed bit set, and every 2 MiB leaf
// with its dirty bit: the CPU's page walker then never writes to the
// tables. A walker's write is a write to guest memory like any other, and
// a balancer that write-protects the page holding the tables (the `wp`
// sampler's probes) would make it fault; the NUMA lab's emulated nested
// paging loops on such a fault instead of reporting it (docs/numa-lab.md).
constexpr uint64_t kTable = kPresent | kWritable | kAccessed;
constexpr uint64_t kPml4 = abi::kPageTableBase;
constexpr uint64_t kPdpt = abi::kPageTableBase + 0x1000;
constexpr uint64_t kFirstPd = abi::kPageTableBase + 0x2000;
constexpr uint64_t kMaxPds = (abi::kPageTableLimit - kFirstPd) / 0x1000;

constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Mp = 1ull << 1, kCr0Et = 1ull << 4, kCr0Ne = 1ull << 5,
                   kCr0Wp = 1ull << 16, kCr0Am = 1ull << 18, kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5, kCr4Osfxsr = 1ull << 9, kCr4Osxmmexcpt = 1ull << 10;
constexpr uint64_t kEferLme = 1ull << 8, kEferLma = 1ull << 10;

// GDT: null, 64-bit code, data; both with their accessed bit set (types 11
// and 3, as the segment registers say), so that loading a selector never
// writes to the table.
constexpr uint64_t kCode64 = 0x00af9b000000ffffull, kData = 0x00cf93000000ffffull;
constexpr uint64_t kGdt[] = {0, kCode64, kData};
constexpr uint16_t kCodeSelector = 1 << 3, kDataSelector = 2 << 3;
// Linux's 64-bit boot protocol wants __BOOT_CS at 0x10 and __BOOT_DS at 0x18.
constexpr uint64_t kLinuxGdt[] = {0, 0, kCode64, kData};
constexpr uint16_t kLinuxCodeSelector = 2 << 3, kLinuxDataSelector = 3 << 3;

kvm_segment Segment(uint16_t selector, uint8_t type, bool code) {
  kvm_segment s{};
  s.base = 0;
  s.limit = 0xffffffff;
  s.selector = selector;
  s.type = type;
  s.present = 1;
  s.dpl = 0;
  s.s = 1;
  s.l = code ? 1 : 0;
  s.db = code ? 0 : 1;
  s.g = 1;
  return s;
}

}  // namespace

uint64_t IdentityMapBytes(uint64_t ram_bytes) {
  return (ram_bytes + kGiB + kGiB - 1) / kGiB * kGiB;
}

uint64_t MaxGuestRamBytes() { return (kMaxPds - 1) * kGiB; }

absl::Status WriteLongModeTables(GuestMemory& memory) {
  const uint64_t map_bytes = IdentityMapBytes(memory.total_bytes());
  const uint64_t pds = map_bytes / kGiB;
  if (pds > kMaxPds) {
    return absl::InvalidArgumentError(absl::StrCat("guest memory of ", memory.total_bytes(),
                                                   " bytes is larger than the VMM can map (",
                                                   MaxGuestRamBytes(), " bytes)"));
  }
  auto* pml4 = reinterpret_cast<uint64_t*>(memory.HostPointer(GuestAddress{kPml4}, 0x1000));
  auto* pdpt = reinterpret_cast<uint64_t*>(memory.HostPointer(GuestAddress{kPdpt}, 0x1000));
  auto* pd = reinterpret_cast<uint64_t*>(memory.HostPointer(GuestAddress{kFirstPd}, pds * 0x1000));
  auto* gdt = memory.HostPointer(GuestAddress{abi::kGdtAddress}, sizeof(kGdt));
  if (pml4 == nullptr || pdpt == nullptr || pd == nullptr || gdt == nullptr) {
    return absl::InvalidArgumentError(
        "the first guest memory region is too small for the boot structures");
  }
  std::memset(pml4, 0, 0x1000);
  std::memset(pdpt, 0, 0x1000);
  pml4[0] = kPdpt | kTable;
  for (uint64_t g = 0; g < pds; ++g) {
    pdpt[g] = (kFirstPd + g * 0x1000) | kTable;
    for (uint64_t i = 0; i < 512; ++i) {
      pd[g * 512 + i] = (g * kGiB + (i << 21)) | kTable | kDirty | kHuge;
    }
  }
  std::memcpy(gdt, kGdt, sizeof(kGdt));
  return absl::OkStatus();
}

namespace {

// Long mode with paging through the tables at kPml4, the GDT at
// abi::kGdtAddress, no IDT, and MTRRs on.
absl::Status EnterLongMode(VcpuFd& vcpu, uint16_t gdt_bytes, uint16_t code, uint16_t data) {
  kvm_sregs sregs{};
  if (absl::Status s = vcpu.GetSregs(sregs); !s.ok()) return s;
  sregs.cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Wp | kCr0Am | kCr0Pg;
  sregs.cr3 = kPml4;
  sregs.cr4 = kCr4Pae | kCr4Osfxsr | kCr4Osxmmexcpt;
  sregs.efer = kEferLme | kEferLma;
  sregs.gdt.base = abi::kGdtAddress;
  sregs.gdt.limit = gdt_bytes - 1;
  sregs.idt.base = 0;
  sregs.idt.limit = 0;  // no IDT: any exception ends in a triple fault
  sregs.cs = Segment(code, 11, /*code=*/true);
  sregs.ds = sregs.es = sregs.fs = sregs.gs = sregs.ss = Segment(data, 3, /*code=*/false);
  if (absl::Status s = vcpu.SetSregs(sregs); !s.ok()) return s;
  // MTRRs enabled with write-back as the default type: with MTRRs off, all
  // memory would be uncached and the guest runs orders of magnitude slower.
  constexpr uint32_t kMsrMtrrDefType = 0x2ff;
  constexpr uint64_t kMtrrEnable = 1ull << 11, kMtrrTypeWriteBack = 6;
  if (absl::Status s = vcpu.SetMsrs({{kMsrMtrrDefType, kMtrrEnable | kMtrrTypeWriteBack}});
      !s.ok()) {
    return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ConfigureLongModeVcpu(VcpuFd& vcpu, GuestAddress entry) {
  if (absl::Status s = EnterLongMode(vcpu, sizeof(kGdt), kCodeSelector, kDataSelector); !s.ok()) {
    return s;
  }
  kvm_regs regs{};
  regs.rip = entry.value;
  regs.rsp = abi::kStackBase + (vcpu.index() + 1) * abi::kStackBytes;
  regs.rdi = static_cast<uint64_t>(vcpu.index());
  regs.rsi = abi::kBootInfoAddress;
  regs.rflags = 2;  // reserved bit; IF stays clear
  return vcpu.SetRegs(regs);
}

absl::Status WriteLinuxGdt(GuestMemory& memory) {
  auto* gdt = memory.HostPointer(GuestAddress{abi::kGdtAddress}, sizeof(kLinuxGdt));
  if (gdt == nullptr) return absl::InvalidArgumentError("guest memory too small for the GDT");
  std::memcpy(gdt, kLinuxGdt, sizeof(kLinuxGdt));
  return absl::OkStatus();
}

absl::Status ConfigureLinuxBootVcpu(VcpuFd& vcpu, GuestAddress entry, GuestAddress boot_params) {
  if (absl::Status s =
          EnterLongMode(vcpu, sizeof(kLinuxGdt), kLinuxCodeSelector, kLinuxDataSelector);
      !s.ok()) {
    return s;
  }
  kvm_regs regs{};
  regs.rip = entry.value;
  regs.rsi = boot_params.value;
  regs.rflags = 2;  // interrupts off
  return vcpu.SetRegs(regs);
}

void AddLinuxCpuidBits(std::vector<kvm_cpuid_entry2>& entries, bool tsc_deadline) {
  constexpr uint32_t kHypervisor = 1u << 31, kTscDeadline = 1u << 24;
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) e.ecx |= kHypervisor | (tsc_deadline ? kTscDeadline : 0);
  }
}

std::vector<kvm_cpuid_entry2> CpuidForVcpu(const std::vector<kvm_cpuid_entry2>& supported,
                                           int index) {
  std::vector<kvm_cpuid_entry2> entries = supported;
  for (kvm_cpuid_entry2& e : entries) {
    if (e.function == 1) {
      e.ebx = (e.ebx & 0x00ffffff) | (static_cast<uint32_t>(index) << 24);
    } else if (e.function == 0xb || e.function == 0x1f) {
      e.edx = static_cast<uint32_t>(index);
    }
  }
  return entries;
}

}  // namespace numavm
