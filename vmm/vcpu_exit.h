// A KVM exit decoded into a value, so the run loop is one switch.
#ifndef NUMAVM_VMM_VCPU_EXIT_H_
#define NUMAVM_VMM_VCPU_EXIT_H_

#include <linux/kvm.h>

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace numavm {

struct VcpuExit {
  enum Kind {
    kIo,    // port I/O: port, size, is_write, value (first element)
    kMmio,  // access to guest-physical memory no slot backs
    kHalt,
    kShutdown,     // triple fault
    kInterrupted,  // KVM_RUN returned EINTR: a kick
    kFailEntry,
    kInternalError,
    kDirtyRingFull,
    kMemoryFault,  // KVM_RUN failed with EFAULT: guest memory the host cannot reach
    kFailed,       // KVM_RUN itself failed
    kOther,
  };
  Kind kind = kOther;
  uint32_t reason = 0;  // raw exit_reason
  uint16_t port = 0;
  uint8_t size = 0;
  bool is_write = false;
  uint32_t count = 0;    // I/O repeat count (rep outs)
  uint64_t value = 0;    // first I/O element; hardware reason; suberror
  uint64_t address = 0;  // MMIO guest-physical address
  absl::Status status;   // for kFailed and kMemoryFault

  static VcpuExit Failed(absl::Status s) {
    VcpuExit e;
    e.kind = kFailed;
    e.status = std::move(s);
    return e;
  }
};

VcpuExit DecodeExit(const kvm_run& run);

// One line describing the exit, for error messages.
std::string DescribeExit(const VcpuExit& exit);

}  // namespace numavm

#endif  // NUMAVM_VMM_VCPU_EXIT_H_
