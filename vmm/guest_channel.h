// Decodes the guest's port-I/O calls (see guest_abi.h), validates them and
// records what they say. Guest input is hostile until proven otherwise.
#ifndef NUMAVM_VMM_GUEST_CHANNEL_H_
#define NUMAVM_VMM_GUEST_CHANNEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/move_fence.h"
#include "vmm/guest_abi.h"
#include "vmm/guest_memory.h"
#include "vmm/guest_observer.h"
#include "vmm/port_devices.h"
#include "vmm/run_record.h"

namespace numavm {

struct ChannelLimits {
  uint64_t console_bytes = 1ull << 20;  // more than this is a flood
  size_t console_lines_kept = 200;
  size_t line_bytes = 1024;
};

class GuestChannel final : public PortDevices {
 public:
  using Clock = std::function<absl::Duration()>;
  using ConsoleSink = std::function<void(int vcpu, absl::string_view line)>;

  GuestChannel(const GuestMemory& memory, int vcpus, Clock clock, GuestObserver* observer,
               ConsoleSink console, ChannelLimits limits = {});

  using Reply = PortReply;

  // A write of `value` (`size` bytes) to `port` by vCPU `vcpu`.
  Reply HandleOut(int vcpu, uint16_t port, uint8_t size, uint64_t value);

  // PortDevices: the channel's calls are OUTs; an IN or an access outside
  // RAM is a guest fault.
  PortReply Out(int vcpu, uint16_t port, uint8_t size, uint64_t value) override {
    return HandleOut(vcpu, port, size, value);
  }
  PortReply In(int vcpu, uint16_t port, uint8_t size) override;
  PortReply Mmio(int vcpu, uint64_t address, uint8_t size, bool is_write, uint64_t value) override;

  // Host reads of the guest's mailboxes wait for page moves that take
  // guest memory away for a moment (not owned; may be null).
  void set_move_fence(MoveFence* fence) { fence_ = fence; }

  RunRecord Snapshot() const;
  // Cumulative bytes each vCPU reported so far (for live statistics).
  std::vector<uint64_t> ProgressBytes() const;

 private:
  Reply Console(int vcpu, char c);
  Reply Exception(uint64_t vector, const uint64_t* words) const;
  // A copy of vCPU `vcpu`'s mailbox, read once per call.
  abi::Mailbox ReadMailbox(int vcpu) const;

  const GuestMemory& memory_;
  const Clock clock_;
  GuestObserver* const observer_;
  const ConsoleSink console_sink_;
  const ChannelLimits limits_;
  MoveFence* fence_ = nullptr;

  mutable absl::Mutex mu_;
  RunRecord record_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> line_buffers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_VMM_GUEST_CHANNEL_H_
