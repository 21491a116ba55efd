// A VM of the bundled VMM: KVM, guest memory, vCPU threads, the guest
// channel. Create() lists the setup steps in order; members are declared in
// that order, so destruction undoes setup in reverse.
#ifndef NUMAVM_VMM_VIRTUAL_MACHINE_H_
#define NUMAVM_VMM_VIRTUAL_MACHINE_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "vmm/elf_payload.h"
#include "vmm/guest_channel.h"
#include "vmm/guest_memory.h"
#include "vmm/guest_observer.h"
#include "vmm/kvm.h"
#include "vmm/linux_devices.h"
#include "vmm/run_control.h"
#include "vmm/run_record.h"
#include "vmm/vcpu_runner.h"
#include "vmm/vm_config.h"

namespace numavm {

// A Linux guest: a bzImage, an optional initrd, the kernel command line.
struct LinuxGuest {
  std::string kernel_name;  // for messages
  std::vector<uint8_t> kernel;
  std::vector<uint8_t> initrd;
  std::string cmdline;
};

struct RunOutcome {
  RunEnd end = RunEnd::kCompleted;
  std::string message;
  absl::Duration elapsed;                 // from creation to the end
  std::optional<absl::Duration> startup;  // creation to first guest instruction
  RunRecord record;
};

class VirtualMachine final {
 public:
  // `config` must have passed NormalizeVmConfig. `observer` may be null and
  // must outlive the VM.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<VirtualMachine>> Create(
      VmConfig config, const ElfPayload& payload, GuestObserver* observer);
  // A Linux guest (vmm/linux_boot.h) with KVM's in-kernel irqchip and PIT,
  // COM1 as its console (to stderr) and ACPI tables with the guest's cells;
  // the run ends when it powers off or resets (vmm/linux_devices.h).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<VirtualMachine>> Create(
      VmConfig config, const LinuxGuest& guest, GuestObserver* observer);

  VirtualMachine(const VirtualMachine&) = delete;
  VirtualMachine& operator=(const VirtualMachine&) = delete;
  ~VirtualMachine();

  // Starts the vCPU threads and blocks until the VM ends.
  RunOutcome Run();
  // Ends a running VM from any thread (signal watcher, balancer).
  void RequestStop(RunEnd end, std::string message);

  // A vCPU's dirty ring, if the VM was created with one.
  struct DirtyRingMemory {
    void* entries = nullptr;
    uint32_t count = 0;
  };
  std::vector<DirtyRingMemory> DirtyRings() const;
  // Called on a vCPU's thread when its dirty ring is full; it must harvest
  // and reset the ring. Set before Run().
  void SetDirtyRingFullHandler(std::function<void(int vcpu)> handler);
  // Called on a vCPU's thread when KVM_RUN failed with EFAULT (at the
  // guest-physical `gpa` KVM named, or none: an access its instruction
  // emulator could not make); true: enter again. Asked before the move
  // fence. Set while vCPUs run or before; an empty handler removes it.
  void SetMemoryFaultHandler(std::function<bool(int vcpu, std::optional<uint64_t> gpa)> handler);

  const VmConfig& config() const { return config_; }
  int vm_fd() const { return vm_.fd(); }
  const GuestMemory& memory() const { return memory_; }
  // What a page move that takes guest memory away for a moment raises
  // (base/move_fence.h): the vCPU threads and the guest channel honour it.
  MoveFence& move_fence() { return move_fence_; }
  const GuestChannel& channel() const { return *channel_; }
  // Host thread ids of the vCPUs (0 until a thread has started).
  std::vector<pid_t> VcpuThreadIds() const;
  // KVM's in-kernel irqchip (a Linux guest): its vCPUs' page faults can be
  // taken by KVM's async-page-fault workers.
  bool has_irqchip() const { return linux_devices_ != nullptr; }
  // Time since creation began.
  absl::Duration Elapsed() const;

 private:
  VirtualMachine(VmConfig config, std::chrono::steady_clock::time_point created, Kvm kvm, VmFd vm,
                 GuestMemory memory, GuestObserver* observer);
  // Memory, KVM and the VM; Setup() does the rest.
  static absl::StatusOr<std::unique_ptr<VirtualMachine>> Create(VmConfig config,
                                                                GuestObserver* observer);
  // Exactly one of `payload` and `guest` is set.
  absl::Status Setup(const ElfPayload* payload, const LinuxGuest* guest);
  // Linux: the irqchip and PIT (before any vCPU), then the boot image.
  absl::Status CreateIrqchip();
  // Writes the kernel, initrd, command line, zero page and ACPI tables;
  // the kernel's entry. The vCPUs exist (their TSC rate goes on the
  // command line).
  absl::StatusOr<GuestAddress> LoadLinux(const LinuxGuest& guest);
  // A payload's page tables, GDT, BootInfo and image.
  absl::Status WritePayload(const ElfPayload& payload);
  void KickAll();
  // A vCPU's ring is full: the handler harvests it; without one, the VMM
  // discards the entries so the vCPU can run on.
  void OnDirtyRingFull(int vcpu);
  bool OnMemoryFault(int vcpu, std::optional<uint64_t> gpa);

  const VmConfig config_;
  const std::chrono::steady_clock::time_point created_;
  Kvm kvm_;
  VmFd vm_;
  GuestMemory memory_;
  MoveFence move_fence_;  // page moves that take guest memory away for a moment
  GuestObserver* const observer_;
  std::vector<VcpuFd> vcpus_;
  std::vector<Mapping> dirty_rings_;
  absl::Mutex ring_mu_;
  std::function<void(int)> ring_full_handler_ ABSL_GUARDED_BY(ring_mu_);
  absl::Mutex fault_mu_;
  std::function<bool(int, std::optional<uint64_t>)> memory_fault_handler_
      ABSL_GUARDED_BY(fault_mu_);
  std::unique_ptr<GuestChannel> channel_;
  std::unique_ptr<LinuxDevices> linux_devices_;  // a Linux guest's ports
  RunControl control_;
  std::vector<std::unique_ptr<VcpuRunner>> runners_;
  std::vector<std::thread> threads_;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_VIRTUAL_MACHINE_H_
