#include "vmm/linux_boot.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace numavm {
namespace {

constexpr uint64_t kSetupHeaderOffset = 0x1f1;
constexpr uint32_t kHdrS = 0x53726448;  // "HdrS"
constexpr uint16_t kBootFlag = 0xaa55;
constexpr uint16_t kFirst64BitProtocol = 0x020c;  // 2.12: xloadflags
constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kDefaultLoad = 16 * kMiB;

uint64_t AlignUp(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

std::string Protocol(uint16_t p) { return absl::StrFormat("%d.%02d", p >> 8, p & 0xff); }

}  // namespace

absl::StatusOr<LinuxKernel> ParseLinuxKernel(std::span<const uint8_t> file,
                                             absl::string_view name) {
  auto bad = [&](auto&&... why) {
    return absl::InvalidArgumentError(absl::StrCat("kernel ", name, ": ", why...));
  };
  if (file.size() >= 4 && std::memcmp(file.data(),
                                      "\x7f"
                                      "ELF",
                                      4) == 0) {
    return bad("an ELF file (a vmlinux?); numavm boots a bzImage (arch/x86/boot/bzImage)");
  }
  LinuxKernel k;
  if (file.size() < kSetupHeaderOffset + sizeof(setup_header)) {
    return bad("not a Linux kernel (", file.size(), " bytes: too short for a boot header)");
  }
  std::memcpy(&k.header, file.data() + kSetupHeaderOffset, sizeof(setup_header));
  const setup_header& h = k.header;
  if (h.header != kHdrS || h.boot_flag != kBootFlag) {
    return bad("not a Linux kernel (no 'HdrS' boot header)");
  }
  k.protocol = h.version;
  if (k.protocol < kFirst64BitProtocol) {
    return bad("boot protocol ", Protocol(k.protocol), " is too old: the 64-bit entry needs ",
               Protocol(kFirst64BitProtocol));
  }
  if ((h.xloadflags & XLF_KERNEL_64) == 0) {
    return bad("no 64-bit entry (xloadflags 0x", absl::Hex(h.xloadflags), "): a 32-bit kernel?");
  }
  k.setup_bytes = (static_cast<uint64_t>(h.setup_sects == 0 ? 4 : h.setup_sects) + 1) * 512;
  const uint64_t wanted = k.setup_bytes + static_cast<uint64_t>(h.syssize) * 16;
  if (file.size() < wanted || file.size() <= k.setup_bytes) {
    return bad("truncated: its header says ", wanted, " bytes, the file has ", file.size());
  }
  k.kernel_bytes = file.size() - k.setup_bytes;
  k.pref_address = h.pref_address;
  k.init_size = std::max<uint64_t>(h.init_size, k.kernel_bytes);
  k.alignment = h.kernel_alignment;
  k.relocatable = h.relocatable_kernel != 0;
  return k;
}

absl::StatusOr<LinuxBootPlan> PlanLinuxBoot(const LinuxKernel& kernel, uint64_t ram_bytes,
                                            uint64_t initrd_bytes, size_t cmdline_bytes) {
  if (ram_bytes > kLinuxMmioStart) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Linux guest has at most ", kLinuxMmioStart / kMiB, " MiB of RAM for now (",
                     ram_bytes / kMiB, " MiB asked): above it sit the IOAPIC and local APICs"));
  }
  const uint64_t cmdline_max =
      std::min<uint64_t>(kLinuxCmdlineMax, static_cast<uint64_t>(kernel.header.cmdline_size) + 1);
  if (cmdline_bytes + 1 > cmdline_max) {
    return absl::InvalidArgumentError(absl::StrCat("kernel command line of ", cmdline_bytes,
                                                   " bytes; this kernel takes at most ",
                                                   cmdline_max - 1));
  }
  LinuxBootPlan plan;
  plan.kernel = kernel.pref_address != 0 ? kernel.pref_address : kDefaultLoad;
  if (kernel.relocatable) {
    plan.kernel = AlignUp(std::max(plan.kernel, kDefaultLoad), kernel.alignment);
  }
  const uint64_t kernel_end = plan.kernel + kernel.init_size;
  if (kernel_end > ram_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the kernel needs ", AlignUp(kernel.init_size, kMiB) / kMiB, " MiB from 0x",
        absl::Hex(plan.kernel), ": more than the guest's ", ram_bytes / kMiB, " MiB of RAM"));
  }
  plan.entry = plan.kernel + 0x200;
  if (initrd_bytes > 0) {
    uint64_t limit = ram_bytes;
    if ((kernel.header.xloadflags & XLF_CAN_BE_LOADED_ABOVE_4G) == 0) {
      limit = std::min<uint64_t>(limit, static_cast<uint64_t>(kernel.header.initrd_addr_max) + 1);
    }
    const uint64_t initrd = limit >= initrd_bytes ? (limit - initrd_bytes) & ~0xfffull : 0;
    if (limit < initrd_bytes || initrd < AlignUp(kernel_end, 0x1000)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an initrd of ", AlignUp(initrd_bytes, kMiB) / kMiB,
          " MiB does not fit between the kernel's end (0x", absl::Hex(kernel_end), ") and 0x",
          absl::Hex(limit), " (the end of guest RAM or of where this kernel takes an initrd)"));
    }
    plan.initrd = initrd;
    plan.initrd_bytes = initrd_bytes;
  }
  return plan;
}

std::vector<E820Entry> LinuxReservedRanges() {
  return {{kLinuxLowRamEnd, kLinuxHighRamStart - kLinuxLowRamEnd, kE820Reserved}};
}

absl::StatusOr<boot_params> BuildBootParams(const LinuxKernel& kernel, const LinuxBootPlan& plan,
                                            const std::vector<E820Entry>& e820,
                                            uint64_t rsdp_address) {
  if (e820.size() > E820_MAX_ENTRIES_ZEROPAGE) {
    return absl::InvalidArgumentError(
        absl::StrCat("e820: ", e820.size(), " entries, at most ", E820_MAX_ENTRIES_ZEROPAGE));
  }
  boot_params bp;
  std::memset(&bp, 0, sizeof(bp));
  bp.hdr = kernel.header;
  setup_header& h = bp.hdr;
  h.type_of_loader = 0xff;  // undefined loader
  h.loadflags |= LOADED_HIGH | CAN_USE_HEAP;
  h.heap_end_ptr = 0xe000 - 0x200;
  h.vid_mode = 0xffff;  // "normal"
  h.code32_start = static_cast<uint32_t>(plan.kernel);
  h.cmd_line_ptr = static_cast<uint32_t>(plan.cmdline);
  bp.ext_cmd_line_ptr = static_cast<uint32_t>(plan.cmdline >> 32);
  h.ramdisk_image = static_cast<uint32_t>(plan.initrd);
  h.ramdisk_size = static_cast<uint32_t>(plan.initrd_bytes);
  bp.ext_ramdisk_image = static_cast<uint32_t>(plan.initrd >> 32);
  bp.ext_ramdisk_size = static_cast<uint32_t>(plan.initrd_bytes >> 32);
  bp.e820_entries = static_cast<uint8_t>(e820.size());
  for (size_t i = 0; i < e820.size(); ++i) {
    bp.e820_table[i].addr = e820[i].address;
    bp.e820_table[i].size = e820[i].bytes;
    bp.e820_table[i].type = e820[i].type;
  }
  bp.acpi_rsdp_addr = rsdp_address;  // 2.14+; older kernels scan 0xe0000-0xfffff
  return bp;
}

}  // namespace numavm
