// What a vCPU's port I/O (and MMIO outside RAM) reaches: the guest-tools
// channel for payloads, the PC devices of a Linux guest. The run loop asks
// one of these and acts on its reply.
#ifndef NUMAVM_VMM_PORT_DEVICES_H_
#define NUMAVM_VMM_PORT_DEVICES_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "vmm/run_control.h"

namespace numavm {

struct PortReply {
  enum Kind {
    kContinue,
    kExit,   // this vCPU is done, with `exit_status`
    kSleep,  // sleep `sleep`, then continue
    kFault,  // the guest broke the rules: the run ends with `fault`
    kEnd,    // the whole VM ends as `end` with `fault` as its message
  } kind = kContinue;
  uint32_t exit_status = 0;
  absl::Duration sleep;
  std::string fault;
  bool fault_has_rip = false;  // `fault` already says where the guest was
  uint64_t value = 0;          // what an IN or MMIO read returns
  RunEnd end = RunEnd::kCompleted;
};

class PortDevices {
 public:
  virtual ~PortDevices() = default;
  // A write of `value` (`size` bytes) to `port` by vCPU `vcpu`.
  virtual PortReply Out(int vcpu, uint16_t port, uint8_t size, uint64_t value) = 0;
  // A read of `size` bytes from `port`: the reply's value.
  virtual PortReply In(int vcpu, uint16_t port, uint8_t size) = 0;
  // An access to guest-physical memory no slot backs.
  virtual PortReply Mmio(int vcpu, uint64_t address, uint8_t size, bool is_write,
                         uint64_t value) = 0;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_PORT_DEVICES_H_
