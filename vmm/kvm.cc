#include "vmm/kvm.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <cerrno>
#include <memory>

#include "absl/strings/str_cat.h"
#include "vmm/kvm_compat.h"
#include "vmm/status.h"

namespace numavm {

absl::StatusOr<Kvm> Kvm::Open(const char* path) {
  UniqueFd fd(::open(path, O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("open ", path));
  absl::StatusOr<int> version = Ioctl(fd.get(), KVM_GET_API_VERSION, 0ul, "KVM_GET_API_VERSION");
  if (!version.ok()) return version.status();
  if (*version != KVM_API_VERSION) {
    return absl::FailedPreconditionError(
        absl::StrCat("KVM API version ", *version, ", expected ", KVM_API_VERSION));
  }
  absl::StatusOr<int> size = Ioctl(fd.get(), KVM_GET_VCPU_MMAP_SIZE, 0ul, "KVM_GET_VCPU_MMAP_SIZE");
  if (!size.ok()) return size.status();
  return Kvm(std::move(fd), *size);
}

int Kvm::CheckExtension(long capability) const {
  int rc = ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, capability);
  return rc < 0 ? 0 : rc;
}

absl::StatusOr<std::vector<kvm_cpuid_entry2>> Kvm::SupportedCpuid() const {
  constexpr int kMaxEntries = 256;
  size_t bytes = sizeof(kvm_cpuid2) + kMaxEntries * sizeof(kvm_cpuid_entry2);
  auto storage = std::make_unique<uint8_t[]>(bytes);
  auto* cpuid = reinterpret_cast<kvm_cpuid2*>(storage.get());
  cpuid->nent = kMaxEntries;
  absl::Status status =
      Ioctl(fd_.get(), kKvmGetSupportedCpuid, cpuid, "KVM_GET_SUPPORTED_CPUID").status();
  if (!status.ok()) return status;
  return std::vector<kvm_cpuid_entry2>(cpuid->entries, cpuid->entries + cpuid->nent);
}

absl::StatusOr<VmFd> VmFd::Create(const Kvm& kvm) {
  absl::StatusOr<int> fd = Ioctl(kvm.fd(), KVM_CREATE_VM, 0ul, "KVM_CREATE_VM");
  if (!fd.ok()) return fd.status();
  return VmFd(UniqueFd(*fd));
}

int VmFd::CheckExtension(long capability) const {
  int rc = ::ioctl(fd_.get(), KVM_CHECK_EXTENSION, capability);
  return rc < 0 ? 0 : rc;
}

absl::Status VmFd::EnableCapability(uint32_t capability, uint64_t arg0) {
  kvm_enable_cap cap{};
  cap.cap = capability;
  cap.args[0] = arg0;
  return Ioctl(fd_.get(), KVM_ENABLE_CAP, &cap, absl::StrCat("KVM_ENABLE_CAP ", capability))
      .status();
}

absl::Status VmFd::SetMemoryRegion(uint32_t slot, uint32_t flags, uint64_t gpa, uint64_t bytes,
                                   void* host) {
  kvm_userspace_memory_region region{};
  region.slot = slot;
  region.flags = flags;
  region.guest_phys_addr = gpa;
  region.memory_size = bytes;
  region.userspace_addr = reinterpret_cast<uint64_t>(host);
  return Ioctl(fd_.get(), KVM_SET_USER_MEMORY_REGION, &region,
               absl::StrCat("KVM_SET_USER_MEMORY_REGION slot ", slot, " gpa 0x", absl::Hex(gpa),
                            " size 0x", absl::Hex(bytes)))
      .status();
}

absl::StatusOr<VcpuFd> VcpuFd::Create(const Kvm& kvm, const VmFd& vm, int index) {
  absl::StatusOr<int> raw = Ioctl(vm.fd(), KVM_CREATE_VCPU, static_cast<unsigned long>(index),
                                  absl::StrCat("KVM_CREATE_VCPU ", index));
  if (!raw.ok()) return raw.status();
  UniqueFd fd(*raw);
  absl::StatusOr<Mapping> run = Mapping::Map(kvm.vcpu_mmap_size(), PROT_READ | PROT_WRITE,
                                             MAP_SHARED, fd.get(), 0, "mmap kvm_run");
  if (!run.ok()) return run.status();
  return VcpuFd(index, std::move(fd), *std::move(run));
}

VcpuExit VcpuFd::Run() {
  if (::ioctl(fd_.get(), KVM_RUN, 0) < 0) {
    const int e = errno;
    if (e == EINTR || e == EAGAIN) return VcpuExit{VcpuExit::kInterrupted};
    VcpuExit failed = VcpuExit::Failed(ErrnoStatus(e, "KVM_RUN"));
    if (e == EFAULT) {
      failed.kind = VcpuExit::kMemoryFault;
      const kvm_run* run = run_state();
      if (run->exit_reason == kKvmExitMemoryFault) {
        failed.reason = kKvmExitMemoryFault;
        // {flags, gpa, size} at the start of the exit union.
        uint64_t fault[3];
        std::memcpy(fault, &run->hw, sizeof(fault));
        failed.address = fault[1];
        failed.status =
            ErrnoStatus(e, absl::StrCat("KVM_RUN (guest-physical 0x", absl::Hex(fault[1]), ")"));
      }
    }
    return failed;
  }
  return DecodeExit(*run_state());
}

absl::Status VcpuFd::GetRegs(kvm_regs& regs) const {
  return Ioctl(fd_.get(), KVM_GET_REGS, &regs, "KVM_GET_REGS").status();
}
absl::Status VcpuFd::SetRegs(const kvm_regs& regs) {
  return Ioctl(fd_.get(), KVM_SET_REGS, const_cast<kvm_regs*>(&regs), "KVM_SET_REGS").status();
}
absl::Status VcpuFd::GetSregs(kvm_sregs& sregs) const {
  return Ioctl(fd_.get(), KVM_GET_SREGS, &sregs, "KVM_GET_SREGS").status();
}
absl::Status VcpuFd::SetSregs(const kvm_sregs& sregs) {
  return Ioctl(fd_.get(), KVM_SET_SREGS, const_cast<kvm_sregs*>(&sregs), "KVM_SET_SREGS").status();
}

absl::Status VcpuFd::SetMsrs(const std::vector<std::pair<uint32_t, uint64_t>>& msrs) {
  struct {
    KvmMsrsHeader header;
    kvm_msr_entry entries[16];
  } request{};
  if (msrs.size() > 16) return absl::InvalidArgumentError("too many MSRs");
  request.header.nmsrs = static_cast<uint32_t>(msrs.size());
  for (size_t i = 0; i < msrs.size(); ++i) {
    request.entries[i].index = msrs[i].first;
    request.entries[i].data = msrs[i].second;
  }
  absl::StatusOr<int> set = Ioctl(fd_.get(), kKvmSetMsrs, &request, "KVM_SET_MSRS");
  if (!set.ok()) return set.status();
  if (*set != static_cast<int>(msrs.size())) {
    return absl::InternalError(
        absl::StrCat("KVM_SET_MSRS set ", *set, " of ", msrs.size(), " MSRs"));
  }
  return absl::OkStatus();
}

absl::Status VcpuFd::SetCpuid(const std::vector<kvm_cpuid_entry2>& entries) {
  size_t bytes = sizeof(kvm_cpuid2) + entries.size() * sizeof(kvm_cpuid_entry2);
  auto storage = std::make_unique<uint8_t[]>(bytes);
  auto* cpuid = reinterpret_cast<kvm_cpuid2*>(storage.get());
  cpuid->nent = static_cast<uint32_t>(entries.size());
  std::copy(entries.begin(), entries.end(), cpuid->entries);
  return Ioctl(fd_.get(), kKvmSetCpuid2, cpuid, "KVM_SET_CPUID2").status();
}

}  // namespace numavm
