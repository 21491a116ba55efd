#include "vmm/fault_probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <vector>

#include "vmm/kvm.h"
#include "vmm/kvm_compat.h"
#include "vmm/mapping.h"

namespace numavm {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kProbed = kPage;  // guest-physical: the second page

ProtNoneFaults Probe() {
  ProtNoneFaults out;
  absl::StatusOr<Kvm> kvm = Kvm::Open();
  if (!kvm.ok()) return out;
  absl::StatusOr<VmFd> vm = VmFd::Create(*kvm);
  if (!vm.ok()) return out;
  absl::StatusOr<Mapping> memory = Mapping::Map(
      2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, "mmap (fault probe)");
  if (!memory.ok()) return out;
  auto* bytes = static_cast<uint8_t*>(memory->data());
  // Real mode at 0: mov al, [0x1000]; hlt.
  const uint8_t code[] = {0xa0, 0x00, 0x10, 0xf4};
  std::memcpy(bytes, code, sizeof(code));
  bytes[kProbed] = 1;  // populated, then taken away
  if (!vm->SetMemoryRegion(0, 0, 0, 2 * kPage, bytes).ok()) return out;
  if (::mprotect(bytes + kProbed, kPage, PROT_NONE) != 0) return out;
  absl::StatusOr<VcpuFd> vcpu = VcpuFd::Create(*kvm, *vm, 0);
  if (!vcpu.ok()) return out;
  kvm_sregs sregs{};
  if (!vcpu->GetSregs(sregs).ok()) return out;
  sregs.cs.base = 0;
  sregs.cs.selector = 0;
  sregs.ds.base = 0;
  sregs.ds.selector = 0;
  if (!vcpu->SetSregs(sregs).ok()) return out;
  // The page stays inaccessible, so each entry at the instruction takes
  // the same fault again: the first answers, the rest are timed with it.
  constexpr int kRuns = 33;
  std::vector<double> micros;
  for (int i = 0; i < kRuns; ++i) {
    kvm_regs regs{};
    regs.rip = 0;
    regs.rflags = 2;
    if (!vcpu->SetRegs(regs).ok()) break;
    const auto t0 = std::chrono::steady_clock::now();
    const VcpuExit exit = vcpu->Run();
    const auto t1 = std::chrono::steady_clock::now();
    const bool named =
        exit.address / kPage == kProbed / kPage &&
        ((exit.kind == VcpuExit::kMemoryFault && exit.reason == kKvmExitMemoryFault) ||
         exit.kind == VcpuExit::kMmio);
    if (!named) break;
    // An MMIO exit wants its read completed at the next entry: the access
    // was made by KVM's emulator, and only the first such exit is timed.
    micros.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    if (exit.kind == VcpuExit::kMmio) break;
  }
  if (micros.empty()) return out;
  out.names_page = true;
  std::sort(micros.begin(), micros.end());
  out.exit_round_trip = absl::Microseconds(micros[micros.size() / 2]);
  return out;
}

}  // namespace

const ProtNoneFaults& ProbeProtNoneFaults() {
  static const ProtNoneFaults answer = Probe();
  return answer;
}

}  // namespace numavm
