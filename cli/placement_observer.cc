#include "cli/placement_observer.h"

#include "absl/strings/str_cat.h"
#include "balancer/actuation/binding.h"

namespace numavm {

void PlacementObserver::Warn(std::string message) {
  absl::MutexLock lock(&mu_);
  if (warnings_.size() < 32) warnings_.push_back(std::move(message));
}

void PlacementObserver::OnVcpuThreadStart(int vcpu, pid_t tid) {
  if (plan_.mode() == StaticPlacement::kNone) return;
  int node = plan_.VcpuNode(vcpu);
  int index = topology_.IndexOf(node);
  if (index < 0) return;
  if (absl::Status s = PinThread(tid, topology_.nodes[index].cpus); !s.ok()) {
    Warn(absl::StrCat("vCPU ", vcpu, ": ", s.message()));
  }
}

void PlacementObserver::OnLayout(const LayoutHint& hint) {
  {
    absl::MutexLock lock(&mu_);
    if (layouts_.size() < 4096) layouts_.push_back(hint);
  }
  if (plan_.mode() == StaticPlacement::kNone || memory_ == nullptr) return;
  // mbind works on whole pages: shrink the range to the pages inside it.
  const uint64_t page = BackingAlignment(memory_->backing());
  uint64_t first = (hint.start.value + page - 1) / page * page;
  uint64_t last = (hint.start.value + hint.bytes) / page * page;
  if (last <= first) return;
  uint8_t* host = memory_->HostPointer(GuestAddress{first}, last - first);
  if (host == nullptr) return;
  int node = plan_.MemoryNode(hint.vcpu_mask);
  if (absl::Status s = BindMemoryToNode(host, last - first, node); !s.ok()) {
    Warn(absl::StrCat("guest range 0x", absl::Hex(first), "+0x", absl::Hex(last - first), ": ",
                      s.message()));
    return;
  }
  absl::MutexLock lock(&mu_);
  bound_bytes_ += last - first;
}

std::vector<LayoutHint> PlacementObserver::layouts() const {
  absl::MutexLock lock(&mu_);
  return layouts_;
}

std::vector<std::string> PlacementObserver::warnings() const {
  absl::MutexLock lock(&mu_);
  return warnings_;
}

uint64_t PlacementObserver::bound_bytes() const {
  absl::MutexLock lock(&mu_);
  return bound_bytes_;
}

}  // namespace numavm
