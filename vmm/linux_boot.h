// The x86-64 Linux boot protocol (Documentation/arch/x86/boot.rst), the
// 64-bit entry: a bzImage's setup header read and checked, where the kernel,
// its zero page, command line and initrd go in guest memory, and the zero
// page (struct boot_params) with the e820 map and the RSDP's address. Pure:
// bytes in, bytes and addresses out; the VMM copies them and starts the
// boot vCPU in long mode at `entry` with rsi = the zero page (and the GDT's
// __BOOT_CS 0x10 / __BOOT_DS 0x18 flat segments, interrupts off).
#ifndef NUMAVM_VMM_LINUX_BOOT_H_
#define NUMAVM_VMM_LINUX_BOOT_H_

#include <asm/bootparam.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vmm/e820.h"

namespace numavm {

// Fixed low guest-physical addresses of a Linux boot.
inline constexpr uint64_t kLinuxBootParams = 0x7000;
inline constexpr uint64_t kLinuxCmdline = 0x20000;
inline constexpr uint64_t kLinuxCmdlineMax = 0x10000;  // bytes, with the NUL
inline constexpr uint64_t kLinuxAcpiTables = 0xe0000;  // in the BIOS area a kernel scans
// Below 1 MiB: RAM up to the EBDA, then the firmware's area (VGA, BIOS,
// the ACPI tables) reserved.
inline constexpr uint64_t kLinuxLowRamEnd = 0x9fc00;
inline constexpr uint64_t kLinuxHighRamStart = 0x100000;
// KVM's in-kernel IOAPIC and local APICs sit here: guest RAM must end below.
inline constexpr uint64_t kLinuxMmioStart = 0xfec00000;

struct LinuxKernel {
  setup_header header{};     // as in the file
  uint16_t protocol = 0;     // e.g. 0x020f for 2.15
  uint64_t setup_bytes = 0;  // the real-mode part: the 64-bit kernel follows
  uint64_t kernel_bytes = 0;
  uint64_t pref_address = 0;
  uint64_t init_size = 0;  // what it needs from its load address while booting
  uint64_t alignment = 0;
  bool relocatable = false;
};

// Reads and checks a bzImage; errors name `name` and say what is wrong
// ("not a Linux kernel (no 'HdrS' header)", "boot protocol 2.10, 64-bit
// entry needs 2.12", ...).
absl::StatusOr<LinuxKernel> ParseLinuxKernel(std::span<const uint8_t> file, absl::string_view name);

struct LinuxBootPlan {
  uint64_t kernel = 0;  // where the protected-mode kernel is copied
  uint64_t entry = 0;   // kernel + 0x200: startup_64
  uint64_t boot_params = kLinuxBootParams;
  uint64_t cmdline = kLinuxCmdline;
  uint64_t initrd = 0;  // 0: none
  uint64_t initrd_bytes = 0;
};

// Places the kernel at its preferred address (or the next aligned one from
// 16 MiB when relocatable) and the initrd at the top of RAM below the
// kernel's initrd limit; errors say what does not fit.
absl::StatusOr<LinuxBootPlan> PlanLinuxBoot(const LinuxKernel& kernel, uint64_t ram_bytes,
                                            uint64_t initrd_bytes, size_t cmdline_bytes);

// The e820 reservations of a Linux boot: the firmware's area below 1 MiB.
std::vector<E820Entry> LinuxReservedRanges();

// The zero page: the kernel's setup header with the loader's fields set,
// the e820 map and the RSDP's address.
absl::StatusOr<boot_params> BuildBootParams(const LinuxKernel& kernel, const LinuxBootPlan& plan,
                                            const std::vector<E820Entry>& e820,
                                            uint64_t rsdp_address);

}  // namespace numavm

#endif  // NUMAVM_VMM_LINUX_BOOT_H_
