#include "vmm/virtual_machine.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "vmm/boot_info.h"
#include "vmm/console_input.h"
#include "vmm/kvm_compat.h"
#include "vmm/linux_boot.h"
#include "vmm/status.h"
#include "vmm/x86_boot.h"

namespace numavm {
namespace {

void PrintConsoleLine(int vcpu, absl::string_view line) {
  std::fprintf(stderr, "guest[%d]: %.*s\n", vcpu, static_cast<int>(line.size()), line.data());
}

}  // namespace

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(VmConfig config,
                                                                       const ElfPayload& payload,
                                                                       GuestObserver* observer) {
  absl::StatusOr<std::unique_ptr<VirtualMachine>> machine = Create(std::move(config), observer);
  if (!machine.ok()) return machine.status();
  if (absl::Status s = (*machine)->Setup(&payload, nullptr); !s.ok()) return s;
  return machine;
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(VmConfig config,
                                                                       const LinuxGuest& guest,
                                                                       GuestObserver* observer) {
  absl::StatusOr<std::unique_ptr<VirtualMachine>> machine = Create(std::move(config), observer);
  if (!machine.ok()) return machine.status();
  if (absl::Status s = (*machine)->Setup(nullptr, &guest); !s.ok()) return s;
  return machine;
}

absl::StatusOr<std::unique_ptr<VirtualMachine>> VirtualMachine::Create(VmConfig config,
                                                                       GuestObserver* observer) {
  const auto created = std::chrono::steady_clock::now();
  // Host memory first: its errors (e.g. no huge pages) are the user's to fix.
  std::vector<uint64_t> region_bytes;
  for (const CellConfig& cell : config.cells) region_bytes.push_back(cell.memory_bytes);
  absl::StatusOr<GuestMemory> memory = GuestMemory::Create(config.backing, region_bytes);
  if (!memory.ok()) return memory.status();
  absl::StatusOr<Kvm> kvm = Kvm::Open();
  if (!kvm.ok()) return kvm.status();
  absl::StatusOr<VmFd> vm = VmFd::Create(*kvm);
  if (!vm.ok()) return vm.status();

  return std::unique_ptr<VirtualMachine>(new VirtualMachine(
      std::move(config), created, *std::move(kvm), *std::move(vm), *std::move(memory), observer));
}

VirtualMachine::VirtualMachine(VmConfig config, std::chrono::steady_clock::time_point created,
                               Kvm kvm, VmFd vm, GuestMemory memory, GuestObserver* observer)
    : config_(std::move(config)),
      created_(created),
      kvm_(std::move(kvm)),
      vm_(std::move(vm)),
      memory_(std::move(memory)),
      observer_(observer),
      control_(config_.vcpus) {}

// The setup steps, in order.
absl::Status VirtualMachine::Setup(const ElfPayload* payload, const LinuxGuest* guest) {
  // 0. A Linux guest's interrupt controllers and timer, before any vCPU.
  if (guest != nullptr) {
    if (absl::Status s = CreateIrqchip(); !s.ok()) return s;
  }
  // 1. Guest memory becomes KVM memory slots, one per cell.
  for (size_t i = 0; i < memory_.regions().size(); ++i) {
    const GuestRegion& r = memory_.regions()[i];
    if (absl::Status s =
            vm_.SetMemoryRegion(static_cast<uint32_t>(i), 0, r.start.value, r.bytes, r.host());
        !s.ok()) {
      return s;
    }
  }
  // 2. The dirty ring, if asked for: KVM takes it only before vCPUs exist.
  const size_t ring_bytes = size_t{config_.dirty_ring_entries} * sizeof(kvm_dirty_gfn);
  if (ring_bytes != 0) {
    int max_bytes = vm_.CheckExtension(KVM_CAP_DIRTY_LOG_RING);
    if (max_bytes <= 0) {
      return absl::UnimplementedError("this KVM has no dirty ring (KVM_CAP_DIRTY_LOG_RING)");
    }
    if (ring_bytes > static_cast<size_t>(max_bytes) ||
        (config_.dirty_ring_entries & (config_.dirty_ring_entries - 1)) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("dirty ring of ", config_.dirty_ring_entries,
                                                     " entries: must be a power of two of at most ",
                                                     max_bytes / sizeof(kvm_dirty_gfn)));
    }
    if (absl::Status s = vm_.EnableCapability(KVM_CAP_DIRTY_LOG_RING, ring_bytes); !s.ok()) {
      return s;
    }
  }
  // 3. vCPUs, each with CPUID, long-mode registers and its dirty ring (a
  // Linux guest's boot vCPU gets its registers in step 4; the others wait
  // in KVM for the kernel's INIT and startup IPIs).
  const GuestAddress entry{payload != nullptr ? payload->entry.value : 0};
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> cpuid = kvm_.SupportedCpuid();
  if (!cpuid.ok()) return cpuid.status();
  if (guest != nullptr) {
    AddLinuxCpuidBits(*cpuid, vm_.CheckExtension(KVM_CAP_TSC_DEADLINE_TIMER) > 0);
  }
  for (int i = 0; i < config_.vcpus; ++i) {
    absl::StatusOr<VcpuFd> vcpu = VcpuFd::Create(kvm_, vm_, i);
    if (!vcpu.ok()) return vcpu.status();
    if (ring_bytes != 0) {
      absl::StatusOr<Mapping> ring = Mapping::Map(
          ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu->fd(),
          static_cast<off_t>(KVM_DIRTY_LOG_PAGE_OFFSET) * getpagesize(), "mmap dirty ring");
      if (!ring.ok()) return ring.status();
      dirty_rings_.push_back(*std::move(ring));
    }
    if (absl::Status s = vcpu->SetCpuid(CpuidForVcpu(*cpuid, i)); !s.ok()) return s;
    if (guest == nullptr) {
      if (absl::Status s = ConfigureLongModeVcpu(*vcpu, entry); !s.ok()) return s;
    }
    vcpus_.push_back(*std::move(vcpu));
  }
  // 4. Page tables, GDT, BootInfo and the payload image in guest memory;
  // or a Linux guest's image and tables, and its boot vCPU at the entry.
  if (guest == nullptr) {
    if (absl::Status s = WritePayload(*payload); !s.ok()) return s;
  } else {
    absl::StatusOr<GuestAddress> linux_entry = LoadLinux(*guest);
    if (!linux_entry.ok()) return linux_entry.status();
    if (absl::Status s =
            ConfigureLinuxBootVcpu(vcpus_[0], *linux_entry, GuestAddress{kLinuxBootParams});
        !s.ok()) {
      return s;
    }
  }
  // 5. The channel that serves the guest's calls; a Linux guest's PC devices.
  channel_ = std::make_unique<GuestChannel>(
      memory_, config_.vcpus, [this] { return Elapsed(); }, observer_,
      config_.echo_console ? GuestChannel::ConsoleSink(PrintConsoleLine)
                           : GuestChannel::ConsoleSink(),
      config_.channel_limits);
  channel_->set_move_fence(&move_fence_);
  // Guest RAM is read-write whenever no page move has a run of it away.
  move_fence_.set_repair([this] {
    for (const GuestRegion& r : memory_.regions()) {
      (void)::mprotect(r.host(), r.bytes, PROT_READ | PROT_WRITE);
    }
  });
  PortDevices* devices = channel_.get();
  if (guest != nullptr) {
    const bool echo = config_.echo_console;
    linux_devices_ = std::make_unique<LinuxDevices>(
        config_.vcpus,
        [echo](char c) {
          if (echo) std::fputc(c, stderr);
        },
        [this](uint32_t irq, bool level) {
          kvm_irq_level line{};
          line.irq = irq;
          line.level = level ? 1 : 0;
          (void)Ioctl(vm_.fd(), KVM_IRQ_LINE, &line, "KVM_IRQ_LINE");
        });
    devices = linux_devices_.get();
  }
  for (VcpuFd& vcpu : vcpus_) {
    runners_.push_back(std::make_unique<VcpuRunner>(
        vcpu, *devices, control_, observer_, [this](int index) { OnDirtyRingFull(index); },
        [this](int index, std::optional<uint64_t> gpa) { return OnMemoryFault(index, gpa); },
        &move_fence_));
  }
  control_.SetKick([this] { KickAll(); });
  return absl::OkStatus();
}

absl::Status VirtualMachine::WritePayload(const ElfPayload& payload) {
  if (absl::Status s = WriteLongModeTables(memory_); !s.ok()) return s;
  absl::StatusOr<int> tsc_khz = Ioctl(vcpus_[0].fd(), KVM_GET_TSC_KHZ, 0ul, "KVM_GET_TSC_KHZ");
  if (!tsc_khz.ok()) return tsc_khz.status();
  if (absl::Status s = WriteBootInfo(config_, memory_, static_cast<uint32_t>(*tsc_khz)); !s.ok()) {
    return s;
  }
  return LoadElfPayload(payload, memory_);
}

VirtualMachine::~VirtualMachine() {
  RequestStop(RunEnd::kStopped, "VM destroyed");
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

absl::Duration VirtualMachine::Elapsed() const {
  return absl::FromChrono(std::chrono::steady_clock::now() - created_);
}

void VirtualMachine::KickAll() {
  for (auto& runner : runners_) runner->Kick();
}

void VirtualMachine::RequestStop(RunEnd end, std::string message) {
  control_.End(end, std::move(message));
}

std::vector<VirtualMachine::DirtyRingMemory> VirtualMachine::DirtyRings() const {
  std::vector<DirtyRingMemory> rings;
  for (const Mapping& m : dirty_rings_) {
    rings.push_back(DirtyRingMemory{m.data(), config_.dirty_ring_entries});
  }
  return rings;
}

void VirtualMachine::SetDirtyRingFullHandler(std::function<void(int)> handler) {
  absl::MutexLock lock(&ring_mu_);
  ring_full_handler_ = std::move(handler);
}

void VirtualMachine::SetMemoryFaultHandler(
    std::function<bool(int, std::optional<uint64_t>)> handler) {
  absl::MutexLock lock(&fault_mu_);
  memory_fault_handler_ = std::move(handler);
}

bool VirtualMachine::OnMemoryFault(int vcpu, std::optional<uint64_t> gpa) {
  absl::ReaderMutexLock lock(&fault_mu_);
  return memory_fault_handler_ && memory_fault_handler_(vcpu, gpa);
}

void VirtualMachine::OnDirtyRingFull(int vcpu) {
  absl::MutexLock lock(&ring_mu_);
  if (ring_full_handler_) {
    ring_full_handler_(vcpu);
    return;
  }
  if (vcpu < 0 || static_cast<size_t>(vcpu) >= dirty_rings_.size()) return;
  auto* entries = reinterpret_cast<kvm_dirty_gfn*>(dirty_rings_[vcpu].data());
  for (uint32_t i = 0; i < config_.dirty_ring_entries; ++i) {
    __atomic_store_n(&entries[i].flags, KVM_DIRTY_GFN_F_RESET, __ATOMIC_RELEASE);
  }
  (void)Ioctl(vm_.fd(), KVM_RESET_DIRTY_RINGS, 0ul, "KVM_RESET_DIRTY_RINGS");
}

std::vector<pid_t> VirtualMachine::VcpuThreadIds() const {
  std::vector<pid_t> tids;
  for (const auto& r : runners_) tids.push_back(r->tid());
  return tids;
}

RunOutcome VirtualMachine::Run() {
  InstallKickSignalHandler();
  for (auto& runner : runners_) {
    threads_.emplace_back([r = runner.get()] { r->Run(); });
  }
  // A Linux guest reads numavm's terminal (stopped, and the terminal
  // restored, when the run ends).
  std::unique_ptr<ConsoleInput> input;
  if (linux_devices_ && config_.console_input_fd >= 0) {
    LinuxDevices* devices = linux_devices_.get();
    absl::StatusOr<std::unique_ptr<ConsoleInput>> started = ConsoleInput::Start(
        config_.console_input_fd,
        [devices](const char* data, size_t size) { devices->ConsoleInput(data, size); });
    if (started.ok()) input = *std::move(started);  // else: output only
  }
  control_.Wait(config_.timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                            : absl::Now() + config_.timeout,
                config_.timeout);
  // A run that timed out: what each vCPU had done (before they leave).
  std::string stuck;
  if (control_.end() == RunEnd::kTimeout) {
    for (const auto& r : runners_) absl::StrAppend(&stuck, "; ", r->Describe());
  }
  input.reset();
  // Every runner has been kicked (immediate_exit is set), so each thread
  // leaves KVM_RUN and sees the run has ended.
  for (std::thread& t : threads_) t.join();
  RunOutcome outcome;
  outcome.end = control_.end();
  outcome.message = control_.message() + stuck;
  outcome.elapsed = Elapsed();
  outcome.record = linux_devices_ ? linux_devices_->Snapshot() : channel_->Snapshot();
  for (const VcpuRecord& v : outcome.record.vcpus) {
    if (v.started && (!outcome.startup || *v.started < *outcome.startup)) {
      outcome.startup = v.started;
    }
  }
  return outcome;
}

}  // namespace numavm
