// The guest <-> VMM interface, shared by vmm/ and guest-tools/.
//
// Freestanding on purpose: guest-tools compiles this without a C library.
//
// Guest-physical layout (all identity-mapped by the VMM's page tables):
//   0x1000            GDT
//   0x2000            BootInfo
//   0x4000-0x7fff     one 256-byte Mailbox per vCPU
//   0x10000-0xfffff   page tables
//   0x100000-0x2fffff vCPU stacks (kStackBytes each, top-down)
//   0x400000          payload image (ELF PT_LOAD segments, at most 4 MiB)
//   kHeapStart..RAM   free memory for workloads
//
// A call: the guest fills its Mailbox, then writes to a port with `out`.
// The VMM validates every field: the guest is not trusted.
#ifndef NUMAVM_VMM_GUEST_ABI_H_
#define NUMAVM_VMM_GUEST_ABI_H_

#include <stdint.h>

namespace numavm::abi {

inline constexpr uint64_t kGdtAddress = 0x1000;
inline constexpr uint64_t kBootInfoAddress = 0x2000;
inline constexpr uint64_t kMailboxBase = 0x4000;
inline constexpr uint64_t kMailboxBytes = 256;
inline constexpr uint64_t kPageTableBase = 0x10000;
inline constexpr uint64_t kPageTableLimit = 0x100000;
inline constexpr uint64_t kStackBase = 0x100000;
inline constexpr uint64_t kStackBytes = 32 * 1024;
inline constexpr uint64_t kPayloadBase = 0x400000;
inline constexpr uint64_t kPayloadLimit = 0x800000;
inline constexpr uint64_t kHeapStart = 0x800000;
inline constexpr uint32_t kMaxVcpus = 64;
inline constexpr uint32_t kMaxCells = 8;
inline constexpr uint64_t kBootMagic = 0x6e756d61766d3031ull;  // "numavm01"
inline constexpr uint32_t kAbiVersion = 1;

// I/O ports. Byte writes to kPortConsole print; 32-bit writes to the others
// are calls whose arguments are in the caller's Mailbox (or the written value).
enum Port : uint16_t {
  kPortConsole = 0x500,    // outb: one character
  kPortStarted = 0x501,    // outl: vCPU reached its entry (value ignored)
  kPortProgress = 0x502,   // Mailbox.u64[0] = cumulative bytes processed
  kPortPhase = 0x503,      // Mailbox.text = phase name
  kPortResult = 0x504,     // Mailbox.text = key, Mailbox.u64[0] = value
  kPortExit = 0x505,       // outl value = exit status of this vCPU
  kPortLayout = 0x506,     // Mailbox.u64[0..2] = gpa, bytes, vCPU mask
  kPortSleep = 0x507,      // Mailbox.u64[0] = microseconds to sleep
  kPortException = 0x508,  // outl value = vector; Mailbox.u64[0..3] = error
                           // code, rip, cr2, rsp of the interrupted code
};

struct Cell {
  uint64_t start;  // guest-physical
  uint64_t size;
  uint64_t vcpu_mask;  // bit i: vCPU i belongs to this cell
};

struct BootInfo {
  uint64_t magic;
  uint32_t version;
  uint32_t vcpu_count;
  uint64_t ram_bytes;
  uint64_t heap_start;
  uint64_t heap_end;
  uint32_t cell_count;
  uint32_t tsc_khz;  // guest TSC frequency, for time-bounded workloads
  Cell cells[kMaxCells];
  char args[512];  // NUL-terminated "key=value key=value"
};

struct Mailbox {
  uint64_t u64[4];
  char text[224];  // NUL-terminated within the array
};
static_assert(sizeof(Mailbox) == kMailboxBytes);
static_assert(sizeof(BootInfo) <= 0x1000);
static_assert(kMailboxBase + kMaxVcpus * kMailboxBytes <= kPageTableBase);
static_assert(kStackBase + kMaxVcpus * kStackBytes <= kPayloadBase);

}  // namespace numavm::abi

#endif  // NUMAVM_VMM_GUEST_ABI_H_
