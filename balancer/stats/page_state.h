// Compact per-page state for the placement policy: 4 bytes per 4 KiB guest
// page (the budget), so a 1 TiB guest needs 1 GiB of balancer memory.
//
// Evidence ages with the page's own samples: the count of vCPU changes goes
// up on a change and down after a run of four samples from one vCPU (a
// page shared at random by two vCPUs has such a run one time in eight, so
// its count stays up); node changes go up on a change and down on a
// repeat; a cross-group mark is cleared when two samples in a row come
// from one group. A page whose owner changed twice is therefore not
// "shared" forever: once its new owner has sampled it a few times in a row
// it is private again and follows that owner.
#ifndef NUMAVM_BALANCER_STATS_PAGE_STATE_H_
#define NUMAVM_BALANCER_STATS_PAGE_STATE_H_

#include <cstdint>
#include <vector>

namespace numavm {

struct PageState {
  static constexpr uint8_t kNoNode = 0xff;
  static constexpr int kNoVcpu = 1023;
  static constexpr int kMaxVcpus = 1023;  // vCPU indices 0-1022 fit
  // Bits 0-9: the previous sample's vCPU (kNoVcpu: none); 10-11: samples
  // from it in a row since the last change (0-3).
  uint16_t vcpu_bits = kNoVcpu;
  uint8_t last_node = kNoNode;  // node index of the previous sample's vCPU
  uint8_t bits = 0;

  int last_vcpu() const { return vcpu_bits & 1023; }
  void set_last_vcpu(int vcpu) {
    vcpu_bits = static_cast<uint16_t>((vcpu_bits & ~1023) | (vcpu & 1023));
  }
  int run() const { return (vcpu_bits >> 10) & 3; }
  void set_run(int run) {
    vcpu_bits = static_cast<uint16_t>((vcpu_bits & ~(3 << 10)) | ((run & 3) << 10));
  }

  // Bits 0-1: vCPU changes between consecutive samples lately (0-3: +1 on a
  // change, -1 after a run of four from one vCPU). One is a hand-over
  // (first touch by one vCPU, use by another); two or more is sharing.
  static constexpr uint8_t kSwitchShift = 0;
  // Bits 2-3: node changes lately, the same way; while above zero the page
  // is held (the two-stage filter's hold, and a page used from several
  // nodes).
  static constexpr uint8_t kNodeShift = 2;
  // Bit 4: shared between vCPU groups (consecutive samples from two
  // groups, beyond a first hand-over): no group may pull it.
  static constexpr uint8_t kCrossGroup = 1 << 4;
  // Bits 5-6: a move was asked for in this 10 s epoch / the previous one;
  // a page asked to move again meanwhile is a re-migration.
  static constexpr uint8_t kMovedNow = 1 << 5;
  static constexpr uint8_t kMovedBefore = 1 << 6;

  int vcpu_switches() const { return Count(kSwitchShift); }
  void add_vcpu_switch() { Step(kSwitchShift, +1); }
  void same_vcpu_again() { Step(kSwitchShift, -1); }
  bool shared_by_vcpus() const { return vcpu_switches() >= 2; }

  int node_changes() const { return Count(kNodeShift); }
  void add_node_change(int n) { Step(kNodeShift, n); }
  void same_node_again() { Step(kNodeShift, -1); }

  bool has(uint8_t flag) const { return (bits & flag) != 0; }
  void set(uint8_t flag) { bits = static_cast<uint8_t>(bits | flag); }
  void clear(uint8_t flag) { bits = static_cast<uint8_t>(bits & ~flag); }

 private:
  int Count(uint8_t shift) const { return (bits >> shift) & 3; }
  void Step(uint8_t shift, int delta) {
    int v = Count(shift) + delta;
    v = v < 0 ? 0 : v > 3 ? 3 : v;
    bits = static_cast<uint8_t>((bits & ~(3 << shift)) | (v << shift));
  }
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
