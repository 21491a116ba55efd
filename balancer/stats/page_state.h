// Compact per-page state for the placement policy: 4 bytes per 4 KiB guest
// page (the budget), so a 1 TiB guest needs 1 GiB of balancer memory.
#ifndef NUMAVM_BALANCER_STATS_PAGE_STATE_H_
#define NUMAVM_BALANCER_STATS_PAGE_STATE_H_

#include <cstdint>
#include <vector>

namespace numavm {

struct PageState {
  static constexpr uint8_t kNoNode = 0xff;
  uint8_t last_node = kNoNode;  // node index of the previous sample's vCPU
  uint8_t shared_hold = 0;      // > 0: recently used from several nodes
  uint8_t last_vcpu = kNoNode;  // the previous sample's vCPU (grouping)
  uint8_t flags = 0;
  static constexpr uint8_t kEverShared = 1;  // ever sampled from two nodes in a row
  // Bits 1-2: how often consecutive samples came from different vCPUs
  // (saturates at 3). Once is a hand-over (first touch by one vCPU, use by
  // another); twice or more is sharing.
  static constexpr uint8_t kSwitchShift = 1;
  static constexpr uint8_t kSwitchMask = 3 << kSwitchShift;
  int vcpu_switches() const { return (flags & kSwitchMask) >> kSwitchShift; }
  void add_vcpu_switch() {
    if (vcpu_switches() < 3) flags = static_cast<uint8_t>(flags + (1 << kSwitchShift));
  }
  bool shared_by_vcpus() const { return vcpu_switches() >= 2; }
  // Bit 3: shared between vCPU groups (consecutive samples from two groups,
  // beyond a first hand-over): no group may pull it, or two would take turns.
  static constexpr uint8_t kCrossGroup = 1 << 3;
  // Bits 4-5: a move was asked for in this 10 s epoch / the previous one;
  // a page asked to move again meanwhile is a re-migration.
  static constexpr uint8_t kMovedNow = 1 << 4;
  static constexpr uint8_t kMovedBefore = 1 << 5;

};
static_assert(sizeof(PageState) == 4);

class PageStateTable {
 public:
  explicit PageStateTable(uint64_t pages) : pages_(pages) {}
  uint64_t size() const { return pages_.size(); }
  PageState& at(uint64_t page) { return pages_[page]; }
  const PageState& at(uint64_t page) const { return pages_[page]; }
  uint64_t memory_bytes() const { return pages_.capacity() * sizeof(PageState); }

 private:
  std::vector<PageState> pages_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_STATS_PAGE_STATE_H_
