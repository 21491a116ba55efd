#include "vmm/guest_channel.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "vmm/guest_abi.h"

namespace numavm {
namespace {
constexpr absl::Duration kMaxSleep = absl::Seconds(10);

// Architectural exception names (Intel SDM vol. 3, table 6-1).
absl::string_view ExceptionName(uint64_t vector) {
  static constexpr const char* kNames[] = {"#DE (divide error)",
                                           "#DB (debug)",
                                           "NMI",
                                           "#BP (breakpoint)",
                                           "#OF (overflow)",
                                           "#BR (bound range)",
                                           "#UD (invalid opcode)",
                                           "#NM (no math coprocessor)",
                                           "#DF (double fault)",
                                           "vector 9",
                                           "#TS (invalid TSS)",
                                           "#NP (segment not present)",
                                           "#SS (stack fault)",
                                           "#GP (general protection)",
                                           "#PF (page fault)",
                                           "vector 15",
                                           "#MF (x87 error)",
                                           "#AC (alignment check)",
                                           "#MC (machine check)",
                                           "#XM (SIMD exception)",
                                           "#VE (virtualization exception)",
                                           "#CP (control protection)"};
  if (vector < sizeof(kNames) / sizeof(kNames[0])) return kNames[vector];
  return "a reserved or external vector";
}
}  // namespace

GuestChannel::GuestChannel(const GuestMemory& memory, int vcpus, Clock clock,
                           GuestObserver* observer, ConsoleSink console, ChannelLimits limits)
    : memory_(memory),
      clock_(std::move(clock)),
      observer_(observer),
      console_sink_(std::move(console)),
      limits_(limits) {
  record_.vcpus.resize(vcpus);
  line_buffers_.resize(vcpus);
}

abi::Mailbox GuestChannel::ReadMailbox(int vcpu) const {
  abi::Mailbox box{};
  MoveFence::Access access(fence_);
  const uint8_t* at = memory_.HostPointer(
      GuestAddress{abi::kMailboxBase + vcpu * abi::kMailboxBytes}, abi::kMailboxBytes);
  if (at != nullptr) std::memcpy(&box, at, sizeof(box));
  return box;
}

namespace {
std::string MailboxText(const abi::Mailbox& box) {
  // The guest may leave the text unterminated: never read past the array.
  return std::string(box.text, strnlen(box.text, sizeof(box.text)));
}
}  // namespace

GuestChannel::Reply GuestChannel::Console(int vcpu, char c) {
  absl::MutexLock lock(&mu_);
  if (++record_.console_bytes > limits_.console_bytes) {
    return Reply{Reply::kFault,
                 0,
                 {},
                 absl::StrCat("guest console output exceeded ", limits_.console_bytes,
                              " bytes (port flood)")};
  }
  std::string& line = line_buffers_[vcpu];
  if (c != '\n') {
    if (c != '\r') line.push_back(c);
    if (line.size() < limits_.line_bytes) return Reply{};
  }
  if (record_.console.size() < limits_.console_lines_kept) {
    record_.console.push_back(line);
  }
  if (console_sink_) console_sink_(vcpu, line);
  line.clear();
  return Reply{};
}

GuestChannel::Reply GuestChannel::HandleOut(int vcpu, uint16_t port, uint8_t size, uint64_t value) {
  const absl::Duration now = clock_();
  const abi::Mailbox box = ReadMailbox(vcpu);
  const uint64_t* words = box.u64;
  switch (port) {
    case abi::kPortConsole:
      return Console(vcpu, static_cast<char>(value & 0xff));
    case abi::kPortStarted: {
      absl::MutexLock lock(&mu_);
      if (!record_.vcpus[vcpu].started) record_.vcpus[vcpu].started = now;
      return Reply{};
    }
    case abi::kPortProgress: {
      absl::MutexLock lock(&mu_);
      auto& progress = record_.vcpus[vcpu].progress;
      // Cumulative by contract; a guest that goes backwards is ignored.
      if (progress.empty() || words[0] >= progress.back().bytes) {
        progress.push_back(ProgressSample{now, words[0]});
      }
      return Reply{};
    }
    case abi::kPortPhase: {
      std::string name = MailboxText(box);
      absl::MutexLock lock(&mu_);
      record_.phases.push_back(PhaseMark{now, vcpu, std::move(name)});
      return Reply{};
    }
    case abi::kPortResult: {
      std::string key = MailboxText(box);
      absl::MutexLock lock(&mu_);
      record_.results.push_back(ResultEntry{vcpu, std::move(key), words[0]});
      return Reply{};
    }
    case abi::kPortExit: {
      absl::MutexLock lock(&mu_);
      record_.vcpus[vcpu].exited = now;
      record_.vcpus[vcpu].exit_status = static_cast<uint32_t>(value);
      return Reply{Reply::kExit, static_cast<uint32_t>(value)};
    }
    case abi::kPortLayout: {
      LayoutHint hint{GuestAddress{words[0]}, words[1], words[2]};
      // Only ranges inside one RAM region are acted on; others are dropped.
      if (observer_ != nullptr && hint.bytes != 0 &&
          memory_.HostPointer(hint.start, hint.bytes) != nullptr) {
        observer_->OnLayout(hint);
      }
      return Reply{};
    }
    case abi::kPortException:
      return Exception(value, words);
    case abi::kPortSleep: {
      absl::Duration d = absl::Microseconds(
          static_cast<int64_t>(std::min<uint64_t>(words[0], absl::ToInt64Microseconds(kMaxSleep))));
      return Reply{Reply::kSleep, 0, d};
    }
    default:
      return Reply{Reply::kFault,
                   0,
                   {},
                   absl::StrCat("write to unknown I/O port 0x", absl::Hex(port), " (", size,
                                " bytes, value 0x", absl::Hex(value), ")")};
  }
}

// The guest runtime's exception handlers report here (guest-tools/runtime/
// exceptions.S). Everything in it is the guest's word: printed, never used.
GuestChannel::Reply GuestChannel::Exception(uint64_t vector, const uint64_t* words) const {
  std::string what = absl::StrCat("guest exception ", ExceptionName(vector), " [vector ", vector,
                                  "] at rip 0x", absl::Hex(words[1]));
  if (vector == 14) absl::StrAppend(&what, ", address 0x", absl::Hex(words[2]));
  absl::StrAppend(&what, ", error code 0x", absl::Hex(words[0]), ", rsp 0x", absl::Hex(words[3]));
  Reply reply{Reply::kFault, 0, {}, std::move(what)};
  reply.fault_has_rip = true;
  return reply;
}

RunRecord GuestChannel::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return record_;
}

std::vector<uint64_t> GuestChannel::ProgressBytes() const {
  absl::MutexLock lock(&mu_);
  std::vector<uint64_t> out;
  for (const VcpuRecord& v : record_.vcpus) out.push_back(v.bytes());
  return out;
}

PortReply GuestChannel::In(int, uint16_t port, uint8_t size) {
  PortReply r{PortReply::kFault};
  r.fault =
      absl::StrCat("unsupported read from I/O port 0x", absl::Hex(port), " (", size, " bytes)");
  return r;
}

PortReply GuestChannel::Mmio(int, uint64_t address, uint8_t size, bool is_write, uint64_t value) {
  // Guest RAM that KVM could not reach - a page move had taken it away for a
  // moment (base/move_fence.h) - may come here from KVM's emulator: the
  // access is done on the guest's memory once the move is over.
  if (fence_ != nullptr && size <= sizeof(value)) {
    MoveFence::Access access(fence_);
    if (uint8_t* at = memory_.HostPointer(GuestAddress{address}, size); at != nullptr) {
      PortReply done{PortReply::kContinue};
      if (is_write) {
        std::memcpy(at, &value, size);
      } else {
        std::memcpy(&done.value, at, size);
      }
      fence_->Waited();
      return done;
    }
  }
  PortReply r{PortReply::kFault};
  r.fault = absl::StrCat(is_write ? "write of " : "read of ", size, " bytes at guest-physical 0x",
                         absl::Hex(address), ", outside guest RAM");
  return r;
}

}  // namespace numavm
