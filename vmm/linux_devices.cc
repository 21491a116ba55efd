#include "vmm/linux_devices.h"

#include "vmm/acpi_tables.h"

namespace numavm {
namespace {

constexpr uint16_t kKeyboardCommand = 0x64;
constexpr uint8_t kKeyboardPulseReset = 0xfe;

PortReply Ended(std::string why) {
  PortReply r{PortReply::kEnd};
  r.end = RunEnd::kCompleted;
  r.fault = std::move(why);
  return r;
}

PortReply Value(uint64_t value) {
  PortReply r;
  r.value = value;
  return r;
}

}  // namespace

LinuxDevices::LinuxDevices(int vcpus, ConsoleSink console, std::function<void(uint32_t, bool)> irq,
                           size_t lines_kept)
    : vcpus_(vcpus),
      console_(std::move(console)),
      lines_kept_(lines_kept),
      com1_([this](char c) { Console(c); },
            [irq = std::move(irq)](bool level) {
              if (irq) irq(kCom1Irq, level);
            }) {}

void LinuxDevices::Console(char c) {
  if (console_) console_(c);
  absl::MutexLock lock(&mu_);
  ++bytes_;
  if (lines_.size() >= lines_kept_) return;
  if (c == '\n') {
    lines_.push_back(std::move(line_));
    line_.clear();
  } else if (c != '\r' && line_.size() < 1024) {
    line_.push_back(c);
  }
}

PortReply LinuxDevices::Out(int, uint16_t port, uint8_t, uint64_t value) {
  if (port >= kCom1Base && port < kCom1Base + 8) {
    com1_.Write(port - kCom1Base, static_cast<uint8_t>(value));
    return {};
  }
  if (port == kAcpiSleepControlPort && (value & kAcpiSleepEnable) != 0) {
    const uint8_t type = (value >> 2) & 7;
    if (type == kAcpiS5SleepType) return Ended("the guest powered off");
    return {};  // other sleep states: not supported, the guest runs on
  }
  if ((port == kAcpiResetPort && value == kAcpiResetValue) ||
      (port == kKeyboardCommand && value == kKeyboardPulseReset)) {
    return Ended("the guest reset itself (numavm ends the VM)");
  }
  return {};
}

PortReply LinuxDevices::In(int, uint16_t port, uint8_t size) {
  if (port >= kCom1Base && port < kCom1Base + 8) return Value(com1_.Read(port - kCom1Base));
  if (port == kAcpiSleepStatusPort) return Value(0);
  if (port == kKeyboardCommand) return Value(0);  // no data, ready for input
  return Value(size >= 8 ? ~0ull : (1ull << (8 * size)) - 1);
}

PortReply LinuxDevices::Mmio(int, uint64_t, uint8_t size, bool, uint64_t) {
  return Value(size >= 8 ? ~0ull : (1ull << (8 * size)) - 1);
}

RunRecord LinuxDevices::Snapshot() const {
  RunRecord r;
  r.vcpus.resize(vcpus_);
  absl::MutexLock lock(&mu_);
  r.console = lines_;
  r.console_bytes = bytes_;
  return r;
}

}  // namespace numavm
