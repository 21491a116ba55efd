#include "balancer/sampling/dirty_logging.h"

#include <linux/kvm.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace numavm {

absl::Status SetDirtyLogging(int vm_fd, const std::vector<GuestRamRegion>& ram, bool on) {
  for (const GuestRamRegion& r : ram) {
    kvm_userspace_memory_region region{};
    region.slot = r.slot;
    region.flags = on ? KVM_MEM_LOG_DIRTY_PAGES : 0;
    region.guest_phys_addr = r.gpa;
    region.memory_size = r.bytes;
    region.userspace_addr = reinterpret_cast<uint64_t>(r.host);
    if (::ioctl(vm_fd, KVM_SET_USER_MEMORY_REGION, &region) != 0) {
      return ErrnoStatus(errno, absl::StrCat("KVM_SET_USER_MEMORY_REGION (dirty logging ",
                                             on ? "on" : "off", ") slot ", r.slot));
    }
  }
  return absl::OkStatus();
}

}  // namespace numavm
