// The Linux half of VirtualMachine's setup: KVM's in-kernel irqchip and PIT,
// and the boot image - kernel, initrd, command line, zero page, ACPI tables
// and the 64-bit entry's page tables and GDT - in guest memory.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "vmm/acpi_tables.h"
#include "vmm/e820.h"
#include "vmm/linux_boot.h"
#include "vmm/status.h"
#include "vmm/virtual_machine.h"
#include "vmm/x86_boot.h"

namespace numavm {
namespace {

// Where KVM keeps the TSS and identity page table that Intel's VMX needs
// in guest-physical space: just below the BIOS at 4 GiB, outside RAM.
constexpr unsigned long kTssAddress = 0xfffbd000;

absl::Status Copy(GuestMemory& memory, uint64_t gpa, const void* data, size_t bytes,
                  absl::string_view what) {
  uint8_t* host = memory.HostPointer(GuestAddress{gpa}, bytes);
  if (host == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " (", bytes, " bytes at 0x", absl::Hex(gpa), ") is outside guest RAM"));
  }
  std::memcpy(host, data, bytes);
  return absl::OkStatus();
}

}  // namespace

absl::Status VirtualMachine::CreateIrqchip() {
  if (absl::StatusOr<int> r = Ioctl(vm_.fd(), KVM_SET_TSS_ADDR, kTssAddress, "KVM_SET_TSS_ADDR");
      !r.ok()) {
    return r.status();
  }
  if (absl::StatusOr<int> r = Ioctl(vm_.fd(), KVM_CREATE_IRQCHIP, 0ul, "KVM_CREATE_IRQCHIP");
      !r.ok()) {
    return r.status();
  }
  kvm_pit_config pit{};
  pit.flags = KVM_PIT_SPEAKER_DUMMY;
  if (absl::StatusOr<int> r = Ioctl(vm_.fd(), KVM_CREATE_PIT2, &pit, "KVM_CREATE_PIT2"); !r.ok()) {
    return r.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<GuestAddress> VirtualMachine::LoadLinux(const LinuxGuest& guest) {
  absl::StatusOr<LinuxKernel> kernel = ParseLinuxKernel(guest.kernel, guest.kernel_name);
  if (!kernel.ok()) return kernel.status();
  // The guest finds no PIT, HPET or PM timer to calibrate its TSC against
  // (a hardware-reduced ACPI machine) and, in the lab at least, no
  // kvm-clock: tell it the rate unless the user did.
  std::string cmdline = guest.cmdline;
  if (cmdline.find("tsc_early_khz=") == std::string::npos) {
    absl::StatusOr<int> khz = Ioctl(vcpus_[0].fd(), KVM_GET_TSC_KHZ, 0ul, "KVM_GET_TSC_KHZ");
    if (!khz.ok()) return khz.status();
    absl::StrAppend(&cmdline, cmdline.empty() ? "" : " ", "tsc_early_khz=", *khz);
  }
  absl::StatusOr<LinuxBootPlan> plan =
      PlanLinuxBoot(*kernel, memory_.total_bytes(), guest.initrd.size(), cmdline.size());
  if (!plan.ok()) return plan.status();

  // ACPI: the guest's cells as NUMA proximity domains.
  AcpiConfig acpi;
  acpi.vcpus = config_.vcpus;
  acpi.address = kLinuxAcpiTables;
  uint64_t base = 0;
  for (const CellConfig& cell : config_.cells) {
    acpi.cells.push_back({base, cell.memory_bytes, cell.vcpus});
    base += cell.memory_bytes;
  }
  if (acpi.cells.size() < 2) acpi.cells.clear();
  absl::StatusOr<AcpiTables> tables = BuildAcpiTables(acpi);
  if (!tables.ok()) return tables.status();
  if (tables->bytes.size() > kLinuxHighRamStart - kLinuxAcpiTables) {
    return absl::InvalidArgumentError(
        absl::StrCat("ACPI tables of ", tables->bytes.size(), " bytes do not fit below 1 MiB"));
  }

  absl::StatusOr<std::vector<E820Entry>> e820 =
      BuildE820(memory_.total_bytes(), LinuxReservedRanges());
  if (!e820.ok()) return e820.status();
  absl::StatusOr<boot_params> zero_page =
      BuildBootParams(*kernel, *plan, *e820, tables->rsdp_address);
  if (!zero_page.ok()) return zero_page.status();

  if (absl::Status s = WriteLongModeTables(memory_); !s.ok()) return s;
  if (absl::Status s = WriteLinuxGdt(memory_); !s.ok()) return s;
  cmdline.push_back('\0');
  const std::pair<uint64_t, std::pair<const void*, size_t>> parts[] = {
      {plan->kernel, {guest.kernel.data() + kernel->setup_bytes, kernel->kernel_bytes}},
      {plan->initrd, {guest.initrd.data(), guest.initrd.size()}},
      {plan->cmdline, {cmdline.data(), cmdline.size()}},
      {plan->boot_params, {&*zero_page, sizeof(boot_params)}},
      {kLinuxAcpiTables, {tables->bytes.data(), tables->bytes.size()}},
  };
  const char* names[] = {"the kernel", "the initrd", "the command line", "the zero page",
                         "the ACPI tables"};
  for (size_t i = 0; i < std::size(parts); ++i) {
    if (parts[i].second.second == 0) continue;
    if (absl::Status s =
            Copy(memory_, parts[i].first, parts[i].second.first, parts[i].second.second, names[i]);
        !s.ok()) {
      return s;
    }
  }
  return GuestAddress{plan->entry};
}

}  // namespace numavm
