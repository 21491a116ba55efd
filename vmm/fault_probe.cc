#include "vmm/fault_probe.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>

#include "vmm/kvm.h"
#include "vmm/kvm_compat.h"
#include "vmm/mapping.h"

namespace numavm {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kProbed = kPage;  // guest-physical: the second page

bool Probe() {
  absl::StatusOr<Kvm> kvm = Kvm::Open();
  if (!kvm.ok()) return false;
  absl::StatusOr<VmFd> vm = VmFd::Create(*kvm);
  if (!vm.ok()) return false;
  absl::StatusOr<Mapping> memory = Mapping::Map(
      2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, "mmap (fault probe)");
  if (!memory.ok()) return false;
  auto* bytes = static_cast<uint8_t*>(memory->data());
  // Real mode at 0: mov al, [0x1000]; hlt.
  const uint8_t code[] = {0xa0, 0x00, 0x10, 0xf4};
  std::memcpy(bytes, code, sizeof(code));
  bytes[kProbed] = 1;  // populated, then taken away
  if (!vm->SetMemoryRegion(0, 0, 0, 2 * kPage, bytes).ok()) return false;
  if (::mprotect(bytes + kProbed, kPage, PROT_NONE) != 0) return false;
  absl::StatusOr<VcpuFd> vcpu = VcpuFd::Create(*kvm, *vm, 0);
  if (!vcpu.ok()) return false;
  kvm_sregs sregs{};
  if (!vcpu->GetSregs(sregs).ok()) return false;
  sregs.cs.base = 0;
  sregs.cs.selector = 0;
  sregs.ds.base = 0;
  sregs.ds.selector = 0;
  if (!vcpu->SetSregs(sregs).ok()) return false;
  kvm_regs regs{};
  regs.rip = 0;
  regs.rflags = 2;
  if (!vcpu->SetRegs(regs).ok()) return false;
  const VcpuExit exit = vcpu->Run();
  if (exit.kind == VcpuExit::kMemoryFault) {
    return exit.reason == kKvmExitMemoryFault && exit.address / kPage == kProbed / kPage;
  }
  return exit.kind == VcpuExit::kMmio && exit.address / kPage == kProbed / kPage;
}

}  // namespace

bool KvmNamesFaultingPages() {
  static const bool names = Probe();
  return names;
}

}  // namespace numavm
