#include "vmm/serial_16550.h"

namespace numavm {
namespace {

// Registers (offsets) and bits.
constexpr uint16_t kData = 0, kIer = 1, kIir = 2, kLcr = 3, kMcr = 4, kLsr = 5, kMsr = 6, kScr = 7;
constexpr uint8_t kLcrDlab = 0x80;
constexpr uint8_t kIerRxData = 0x01, kIerThrEmpty = 0x02;
constexpr uint8_t kIirNone = 0x01, kIirThrEmpty = 0x02, kIirRxData = 0x04, kIirFifos = 0xc0;
constexpr uint8_t kLsrDataReady = 0x01, kLsrThrEmpty = 0x20, kLsrIdle = 0x40;
constexpr uint8_t kMcrLoop = 0x10;
// Modem status with the lines a terminal raises: CTS, DSR, DCD.
constexpr uint8_t kMsrConnected = 0x10 | 0x20 | 0x80;

}  // namespace

void Serial16550::UpdateIrq() {
  const bool level = ((ier_ & kIerThrEmpty) != 0 && thr_empty_pending_) ||
                     ((ier_ & kIerRxData) != 0 && !rx_.empty());
  if (level != line_) {
    line_ = level;
    if (irq_) irq_(level);
  }
}

void Serial16550::Write(uint16_t offset, uint8_t value) {
  absl::MutexLock lock(&mu_);
  const bool dlab = (lcr_ & kLcrDlab) != 0;
  switch (offset) {
    case kData:
      if (dlab) {
        divisor_ = static_cast<uint16_t>((divisor_ & 0xff00) | value);
        return;
      }
      if ((mcr_ & kMcrLoop) == 0 && sink_) sink_(static_cast<char>(value));
      thr_empty_pending_ = true;  // sent at once
      break;
    case kIer:
      if (dlab) {
        divisor_ = static_cast<uint16_t>((divisor_ & 0x00ff) | value << 8);
        return;
      }
      // Enabling the interrupt while the transmitter is empty raises it.
      if ((value & kIerThrEmpty) != 0 && (ier_ & kIerThrEmpty) == 0) thr_empty_pending_ = true;
      ier_ = value & 0x0f;
      break;
    case kIir:
      fcr_ = value;
      if ((value & 0x02) != 0) rx_.clear();  // FIFO control: clear the receiver
      break;
    case kLcr:
      lcr_ = value;
      return;
    case kMcr:
      mcr_ = value & 0x1f;
      return;
    case kScr:
      scr_ = value;
      return;
    default:
      return;  // LSR and MSR are read-only
  }
  UpdateIrq();
}

uint8_t Serial16550::Read(uint16_t offset) {
  absl::MutexLock lock(&mu_);
  const bool dlab = (lcr_ & kLcrDlab) != 0;
  switch (offset) {
    case kData: {
      if (dlab) return static_cast<uint8_t>(divisor_);
      if (rx_.empty()) return 0;
      const uint8_t c = rx_.front();
      rx_.pop_front();
      UpdateIrq();
      return c;
    }
    case kIer:
      return dlab ? static_cast<uint8_t>(divisor_ >> 8) : ier_;
    case kIir: {
      const uint8_t fifos = (fcr_ & 1) != 0 ? kIirFifos : 0;
      // Received data outranks the empty transmitter; it is acknowledged
      // by reading the data.
      if ((ier_ & kIerRxData) != 0 && !rx_.empty()) return fifos | kIirRxData;
      if ((ier_ & kIerThrEmpty) != 0 && thr_empty_pending_) {
        thr_empty_pending_ = false;  // reading IIR acknowledges it
        UpdateIrq();
        return fifos | kIirThrEmpty;
      }
      return fifos | kIirNone;
    }
    case kLcr:
      return lcr_;
    case kMcr:
      return mcr_;
    case kLsr:
      return kLsrThrEmpty | kLsrIdle | (rx_.empty() ? 0 : kLsrDataReady);
    case kMsr:
      // In loopback the modem inputs follow the outputs (the 8250 driver
      // checks this to find the UART).
      if ((mcr_ & kMcrLoop) != 0) {
        return static_cast<uint8_t>(((mcr_ & 0x02) << 3) | ((mcr_ & 0x01) << 5) |
                                    ((mcr_ & 0x04) << 4) | ((mcr_ & 0x08) << 4));
      }
      return kMsrConnected;
    case kScr:
      return scr_;
  }
  return 0xff;
}

void Serial16550::Receive(const char* data, size_t size) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < size; ++i) {
    if (rx_.size() >= kReceiveBuffer) {
      overruns_ += size - i;
      break;
    }
    rx_.push_back(static_cast<uint8_t>(data[i]));
  }
  UpdateIrq();
}

uint64_t Serial16550::overruns() const {
  absl::MutexLock lock(&mu_);
  return overruns_;
}

}  // namespace numavm
