// x86-64 long-mode boot: the VMM builds page tables and a GDT in guest memory
// and starts every vCPU directly in 64-bit mode at the payload entry.
#ifndef NUMAVM_VMM_X86_BOOT_H_
#define NUMAVM_VMM_X86_BOOT_H_

#include <linux/kvm.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "vmm/guest_address.h"
#include "vmm/guest_memory.h"
#include "vmm/kvm.h"

namespace numavm {

// Guest-physical bytes the page tables identity-map: all of RAM plus at least
// 1 GiB beyond it, so a stray access past RAM is an MMIO exit the VMM
// reports, not a page fault.
uint64_t IdentityMapBytes(uint64_t ram_bytes);

// Largest guest RAM the page-table area can map.
uint64_t MaxGuestRamBytes();

// Writes PML4, PDPT and PDs (2 MiB pages) and the GDT into guest memory.
absl::Status WriteLongModeTables(GuestMemory& memory);

// Puts `vcpu` in long mode at `entry`, with its own stack, rdi = its index
// and rsi = the BootInfo address.
absl::Status ConfigureLongModeVcpu(VcpuFd& vcpu, GuestAddress entry);

// Linux's 64-bit entry (vmm/linux_boot.h): the same page tables, a GDT
// with flat __BOOT_CS (0x10) and __BOOT_DS (0x18), rsi = the zero page.
// WriteLinuxGdt replaces the payloads' GDT that WriteLongModeTables wrote.
absl::Status WriteLinuxGdt(GuestMemory& memory);
absl::Status ConfigureLinuxBootVcpu(VcpuFd& vcpu, GuestAddress entry, GuestAddress boot_params);

// What a Linux guest must be told that KVM_GET_SUPPORTED_CPUID leaves out:
// that it runs on a hypervisor (so it finds KVM's leaves and kvm-clock),
// and that its local APIC timer takes TSC deadlines when KVM has them (a
// hardware-reduced ACPI guest has no PIT to calibrate the APIC timer with).
void AddLinuxCpuidBits(std::vector<kvm_cpuid_entry2>& entries, bool tsc_deadline);

// The host's supported CPUID with per-vCPU APIC ids filled in.
std::vector<kvm_cpuid_entry2> CpuidForVcpu(const std::vector<kvm_cpuid_entry2>& supported,
                                           int index);

}  // namespace numavm

#endif  // NUMAVM_VMM_X86_BOOT_H_
