#include "vmm/vcpu_exit.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace numavm {

VcpuExit DecodeExit(const kvm_run& run) {
  VcpuExit e;
  e.reason = run.exit_reason;
  switch (run.exit_reason) {
    case KVM_EXIT_IO: {
      e.kind = VcpuExit::kIo;
      e.port = run.io.port;
      e.size = run.io.size;
      e.is_write = run.io.direction == KVM_EXIT_IO_OUT;
      e.count = run.io.count;
      const auto* data = reinterpret_cast<const uint8_t*>(&run) + run.io.data_offset;
      uint64_t v = 0;
      if (e.size <= sizeof(v)) std::memcpy(&v, data, e.size);
      e.value = v;
      break;
    }
    case KVM_EXIT_MMIO:
      e.kind = VcpuExit::kMmio;
      e.address = run.mmio.phys_addr;
      e.size = static_cast<uint8_t>(run.mmio.len);
      e.is_write = run.mmio.is_write != 0;
      break;
    case KVM_EXIT_HLT:
      e.kind = VcpuExit::kHalt;
      break;
    case KVM_EXIT_SHUTDOWN:
      e.kind = VcpuExit::kShutdown;
      break;
    case KVM_EXIT_FAIL_ENTRY:
      e.kind = VcpuExit::kFailEntry;
      e.value = run.fail_entry.hardware_entry_failure_reason;
      break;
    case KVM_EXIT_INTERNAL_ERROR:
      e.kind = VcpuExit::kInternalError;
      e.value = run.internal.suberror;
      break;
    case KVM_EXIT_DIRTY_RING_FULL:
      e.kind = VcpuExit::kDirtyRingFull;
      break;
    case KVM_EXIT_INTR:
      e.kind = VcpuExit::kInterrupted;
      break;
    default:
      e.kind = VcpuExit::kOther;
  }
  return e;
}

std::string DescribeExit(const VcpuExit& e) {
  switch (e.kind) {
    case VcpuExit::kIo:
      return absl::StrCat(e.is_write ? "write to" : "read from", " I/O port 0x", absl::Hex(e.port),
                          " (", e.size, " bytes)");
    case VcpuExit::kMmio:
      return absl::StrCat(e.is_write ? "write of " : "read of ", e.size,
                          " bytes at guest-physical 0x", absl::Hex(e.address),
                          ", outside guest RAM");
    case VcpuExit::kHalt:
      return "hlt";
    case VcpuExit::kShutdown:
      return "triple fault (shutdown)";
    case VcpuExit::kInterrupted:
      return "interrupted";
    case VcpuExit::kFailEntry:
      return absl::StrCat("VM entry failed, hardware reason 0x", absl::Hex(e.value));
    case VcpuExit::kInternalError:
      return absl::StrCat("KVM internal error, suberror ", e.value);
    case VcpuExit::kDirtyRingFull:
      return "dirty ring full";
    case VcpuExit::kMemoryFault:
    case VcpuExit::kFailed:
      return std::string(e.status.message());
    case VcpuExit::kOther:
      break;
  }
  return absl::StrCat("unexpected exit reason ", e.reason);
}

}  // namespace numavm
