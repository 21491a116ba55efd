// The PC a Linux guest of the bundled VMM sees besides KVM's in-kernel
// irqchip and PIT: COM1 (serial_16550.h) as its console, the ACPI sleep and
// reset registers the FADT names (acpi_tables.h) - `poweroff` and `reboot`
// end the VM - and the keyboard controller's reset line. Any other port
// or address outside RAM reads as all ones and ignores writes, as an empty
// bus does.
#ifndef NUMAVM_VMM_LINUX_DEVICES_H_
#define NUMAVM_VMM_LINUX_DEVICES_H_

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "vmm/port_devices.h"
#include "vmm/run_record.h"
#include "vmm/serial_16550.h"

namespace numavm {

class LinuxDevices final : public PortDevices {
 public:
  using ConsoleSink = std::function<void(char)>;
  // `console` gets every byte the guest writes to COM1; `irq(line, level)`
  // sets an interrupt line of the irqchip. The first `lines_kept` console
  // lines are kept for the report.
  LinuxDevices(int vcpus, ConsoleSink console, std::function<void(uint32_t, bool)> irq,
               size_t lines_kept = 200);

  PortReply Out(int vcpu, uint16_t port, uint8_t size, uint64_t value) override;
  PortReply In(int vcpu, uint16_t port, uint8_t size) override;
  PortReply Mmio(int vcpu, uint64_t address, uint8_t size, bool is_write, uint64_t value) override;

  // The console so far, for the run's record.
  RunRecord Snapshot() const;
  // Input typed at the console, for the guest to read from COM1.
  void ConsoleInput(const char* data, size_t size) { com1_.Receive(data, size); }

 private:
  void Console(char c);

  const int vcpus_;
  const ConsoleSink console_;
  const size_t lines_kept_;
  Serial16550 com1_;
  mutable absl::Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
  std::string line_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_LINUX_DEVICES_H_
