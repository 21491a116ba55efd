// Compact per-page state for the placement policy: 2 bytes per 4 KiB guest
// page (the budget is 4), so a 1 TiB guest needs 512 MiB of balancer memory.
#ifndef NUMAVM_BALANCER_STATS_PAGE_STATE_H_
#define NUMAVM_BALANCER_STATS_PAGE_STATE_H_

#include <cstdint>
#include <vector>

namespace numavm {

struct PageState {
  static constexpr uint8_t kNoNode = 0xff;
  uint8_t last_node = kNoNode;  // node index of the previous sample's vCPU
  uint8_t shared_hold = 0;      // > 0: recently used from several nodes
};
static_assert(sizeof(PageState) == 2);

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
