// Owners of the KVM file descriptors: the system (/dev/kvm), a VM, a vCPU.
#ifndef NUMAVM_VMM_KVM_H_
#define NUMAVM_VMM_KVM_H_

#include <linux/kvm.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "vmm/mapping.h"
#include "vmm/unique_fd.h"
#include "vmm/vcpu_exit.h"

namespace numavm {

class Kvm final {
 public:
  // Opens /dev/kvm (or `path`) and checks the API version.
  [[nodiscard]] static absl::StatusOr<Kvm> Open(const char* path = "/dev/kvm");

  int fd() const { return fd_.get(); }
  int vcpu_mmap_size() const { return vcpu_mmap_size_; }
  int CheckExtension(long capability) const;
  absl::StatusOr<std::vector<kvm_cpuid_entry2>> SupportedCpuid() const;

 private:
  Kvm(UniqueFd fd, int vcpu_mmap_size) : fd_(std::move(fd)), vcpu_mmap_size_(vcpu_mmap_size) {}
  UniqueFd fd_;
  int vcpu_mmap_size_;
};

class VmFd final {
 public:
  [[nodiscard]] static absl::StatusOr<VmFd> Create(const Kvm& kvm);

  int fd() const { return fd_.get(); }
  int CheckExtension(long capability) const;
  absl::Status EnableCapability(uint32_t capability, uint64_t arg0);
  absl::Status SetMemoryRegion(uint32_t slot, uint32_t flags, uint64_t gpa, uint64_t bytes,
                               void* host);

 private:
  explicit VmFd(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

class VcpuFd final {
 public:
  [[nodiscard]] static absl::StatusOr<VcpuFd> Create(const Kvm& kvm, const VmFd& vm, int index);

  int index() const { return index_; }
  int fd() const { return fd_.get(); }
  kvm_run* run_state() const { return reinterpret_cast<kvm_run*>(run_.data()); }

  // One KVM_RUN; never retried on EINTR (that is how a vCPU is kicked).
  VcpuExit Run();

  absl::Status GetRegs(kvm_regs& regs) const;
  absl::Status SetRegs(const kvm_regs& regs);
  absl::Status GetSregs(kvm_sregs& sregs) const;
  absl::Status SetSregs(const kvm_sregs& sregs);
  // Writes model-specific registers (index, value).
  absl::Status SetMsrs(const std::vector<std::pair<uint32_t, uint64_t>>& msrs);
  absl::Status SetCpuid(const std::vector<kvm_cpuid_entry2>& entries);

 private:
  VcpuFd(int index, UniqueFd fd, Mapping run)
      : index_(index), fd_(std::move(fd)), run_(std::move(run)) {}
  int index_;
  UniqueFd fd_;
  Mapping run_;
};

}  // namespace numavm

#endif  // NUMAVM_VMM_KVM_H_
