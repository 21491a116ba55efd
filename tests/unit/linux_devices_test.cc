#include "vmm/linux_devices.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "vmm/acpi_tables.h"
#include "vmm/serial_16550.h"

namespace numavm {
namespace {

struct Com1 {
  std::string out;
  std::vector<bool> irq;  // every change of the line
  Serial16550 uart{[this](char c) { out.push_back(c); }, [this](bool l) { irq.push_back(l); }};
};

TEST(Serial16550, BytesGoOutAndTheTransmitterIsAlwaysEmpty) {
  Com1 c;
  for (char ch : std::string("ok\n")) c.uart.Write(0, static_cast<uint8_t>(ch));
  EXPECT_EQ(c.out, "ok\n");
  EXPECT_EQ(c.uart.Read(5) & 0x60, 0x60) << "LSR: THR empty, transmitter idle";
  EXPECT_EQ(c.uart.Read(5) & 0x01, 0) << "nothing received";
  EXPECT_TRUE(c.irq.empty()) << "no interrupt unless enabled";
}

// The tty layer writes a byte and waits for the transmit-empty interrupt.
TEST(Serial16550, TheTransmitEmptyInterruptIsRaisedAndAcknowledged) {
  Com1 c;
  c.uart.Write(1, 0x02);  // IER: THR empty
  EXPECT_EQ(c.irq, (std::vector<bool>{true})) << "enabling it while empty raises it";
  EXPECT_EQ(c.uart.Read(2) & 0x0f, 0x02) << "IIR names it";
  EXPECT_EQ(c.irq, (std::vector<bool>{true, false})) << "reading IIR acknowledges it";
  EXPECT_EQ(c.uart.Read(2) & 0x0f, 0x01) << "then nothing is pending";
  c.uart.Write(0, 'x');
  EXPECT_EQ(c.irq, (std::vector<bool>{true, false, true})) << "a byte sent raises it again";
  c.uart.Write(1, 0);
  EXPECT_EQ(c.irq.back(), false) << "disabling lowers it";
}

TEST(Serial16550, TheDriversProbesSeeA16550A) {
  Com1 c;
  c.uart.Write(3, 0x80);  // DLAB
  c.uart.Write(0, 0x01);
  c.uart.Write(1, 0x00);
  EXPECT_EQ(c.uart.Read(0), 0x01) << "divisor latch";
  c.uart.Write(3, 0x03);
  EXPECT_TRUE(c.out.empty()) << "divisor writes are not output";
  c.uart.Write(7, 0x5a);
  EXPECT_EQ(c.uart.Read(7), 0x5a) << "scratch";
  c.uart.Write(2, 0x01);  // FCR: FIFOs on
  EXPECT_EQ(c.uart.Read(2) & 0xc0, 0xc0) << "16550A FIFOs";
  c.uart.Write(4, 0x10 | 0x0a);  // loopback, RTS, OUT2
  EXPECT_EQ(c.uart.Read(6) & 0xf0, 0x90) << "loopback: CTS from RTS, DCD from OUT2";
  c.uart.Write(0, 'z');
  EXPECT_TRUE(c.out.empty()) << "loopback output stays inside";
}

// What is typed reaches the guest: LSR's data-ready bit, the data-available
// interrupt (ahead of the transmitter's), bytes in order, the interrupt
// lowered once all are read.
TEST(Serial16550, TypedBytesAreReceivedWithTheirInterrupt) {
  Com1 c;
  c.uart.Write(1, 0x01 | 0x02);  // IER: data available, THR empty
  EXPECT_EQ(c.uart.Read(2) & 0x0f, 0x02) << "only the transmitter so far";
  c.uart.Receive("ls\n", 3);
  EXPECT_EQ(c.irq.back(), true);
  EXPECT_EQ(c.uart.Read(5) & 0x01, 0x01) << "LSR: data ready";
  EXPECT_EQ(c.uart.Read(2) & 0x0f, 0x04) << "IIR: received data first";
  std::string got;
  while (c.uart.Read(5) & 0x01) got.push_back(static_cast<char>(c.uart.Read(0)));
  EXPECT_EQ(got, "ls\n");
  EXPECT_EQ(c.irq.back(), false) << "all read: the line drops";
  EXPECT_EQ(c.uart.Read(2) & 0x0f, 0x01);
  EXPECT_TRUE(c.out.empty()) << "input is not echoed by the UART (the guest echoes)";
}

TEST(Serial16550, InputPastTheBufferIsDroppedAndCounted) {
  Com1 c;
  const std::string flood(Serial16550::kReceiveBuffer + 10, 'y');
  c.uart.Receive(flood.data(), flood.size());
  EXPECT_EQ(c.uart.overruns(), 10u);
  c.uart.Write(2, 0x03);  // FCR: FIFOs on, receiver cleared
  EXPECT_EQ(c.uart.Read(5) & 0x01, 0) << "cleared";
  EXPECT_TRUE(c.irq.empty()) << "the data interrupt was never enabled";
}

TEST(LinuxDevices, PoweroffAndResetEndTheVm) {
  LinuxDevices d(2, nullptr, nullptr);
  EXPECT_EQ(d.Out(0, kAcpiSleepControlPort, 1, kAcpiS5SleepType << 2).kind, PortReply::kContinue)
      << "without SLP_EN nothing happens";
  PortReply off = d.Out(1, kAcpiSleepControlPort, 1, kAcpiSleepEnable | kAcpiS5SleepType << 2);
  EXPECT_EQ(off.kind, PortReply::kEnd);
  EXPECT_EQ(off.end, RunEnd::kCompleted);
  EXPECT_EQ(off.fault, "the guest powered off");
  EXPECT_EQ(d.Out(0, kAcpiSleepControlPort, 1, kAcpiSleepEnable | 3 << 2).kind,
            PortReply::kContinue)
      << "S3 is not supported: the guest runs on";
  EXPECT_EQ(d.Out(0, kAcpiResetPort, 1, kAcpiResetValue).fault,
            "the guest reset itself (numavm ends the VM)");
  EXPECT_EQ(d.Out(0, 0x64, 1, 0xfe).kind, PortReply::kEnd) << "the keyboard controller's reset";
}

TEST(LinuxDevices, AnEmptyBusReadsAllOnes) {
  LinuxDevices d(1, nullptr, nullptr);
  EXPECT_EQ(d.In(0, 0xcfc, 4).value, 0xffffffffu) << "no PCI";
  EXPECT_EQ(d.In(0, 0x71, 1).value, 0xffu);
  EXPECT_EQ(d.In(0, 0x1234, 2).value, 0xffffu);
  EXPECT_EQ(d.Mmio(0, 0xfed00000, 4, false, 0).value, 0xffffffffu) << "no HPET";
  EXPECT_EQ(d.Out(0, 0x80, 1, 0).kind, PortReply::kContinue) << "the I/O delay port";
}

TEST(LinuxDevices, TheConsoleIsEchoedAndItsFirstLinesKept) {
  std::string echoed;
  LinuxDevices d(
      1, [&](char c) { echoed.push_back(c); }, nullptr, /*lines_kept=*/2);
  for (char c : std::string("Linux version 6.1\r\nOne\nTwo\nThree\n")) {
    d.Out(0, kCom1Base, 1, static_cast<uint8_t>(c));
  }
  EXPECT_EQ(echoed, "Linux version 6.1\r\nOne\nTwo\nThree\n");
  RunRecord r = d.Snapshot();
  EXPECT_EQ(r.console, (std::vector<std::string>{"Linux version 6.1", "One"}));
  EXPECT_EQ(r.console_bytes, echoed.size());
  EXPECT_EQ(r.vcpus.size(), 1u);
}

}  // namespace
}  // namespace numavm
