// A 16550A UART as Linux's 8250 driver and early console expect it at
// COM1 (0x3f8, IRQ 4): output goes to a sink at once (the transmitter is
// always empty), and the transmit-empty interrupt is raised when the driver
// enables it or writes a byte, so that the tty layer's writes complete.
// Input (Receive) waits in a receive buffer of up to 4 KiB - more is
// dropped and counted, as a UART overruns - and raises the data-available
// interrupt while any is there.
#ifndef NUMAVM_VMM_SERIAL_16550_H_
#define NUMAVM_VMM_SERIAL_16550_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace numavm {

inline constexpr uint16_t kCom1Base = 0x3f8;
inline constexpr uint32_t kCom1Irq = 4;

class Serial16550 final {
 public:
  using Sink = std::function<void(char)>;
  // `irq(level)` sets the interrupt line.
  Serial16550(Sink sink, std::function<void(bool)> irq)
      : sink_(std::move(sink)), irq_(std::move(irq)) {}

  // Register `offset` (0-7 from the base).
  void Write(uint16_t offset, uint8_t value);
  uint8_t Read(uint16_t offset);
  // Bytes typed at the console, for the guest to read.
  void Receive(const char* data, size_t size);
  // Input bytes dropped because the guest did not read them in time.
  uint64_t overruns() const;

  static constexpr size_t kReceiveBuffer = 4096;

 private:
  void UpdateIrq() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Sink sink_;
  const std::function<void(bool)> irq_;
  mutable absl::Mutex mu_;
  std::deque<uint8_t> rx_ ABSL_GUARDED_BY(mu_);
  uint64_t overruns_ ABSL_GUARDED_BY(mu_) = 0;
  uint8_t ier_ ABSL_GUARDED_BY(mu_) = 0;
  uint8_t lcr_ ABSL_GUARDED_BY(mu_) = 0;
  uint8_t mcr_ ABSL_GUARDED_BY(mu_) = 0;
  uint8_t scr_ ABSL_GUARDED_BY(mu_) = 0;
  uint8_t fcr_ ABSL_GUARDED_BY(mu_) = 0;
  uint16_t divisor_ ABSL_GUARDED_BY(mu_) = 12;  // 9600 baud
  bool thr_empty_pending_ ABSL_GUARDED_BY(mu_) = false;
  bool line_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_SERIAL_16550_H_
