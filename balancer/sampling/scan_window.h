// The scanner's window: like the kernel's NUMA scanner it walks guest memory
// a window at a time, one window per scan period, wrapping at the end.
#ifndef NUMAVM_BALANCER_SAMPLING_SCAN_WINDOW_H_
#define NUMAVM_BALANCER_SAMPLING_SCAN_WINDOW_H_

#include <cstdint>
#include <vector>

namespace numavm {

// A range of guest frame numbers [first, first + count).
struct GfnRange {
  uint64_t first = 0;
  uint64_t count = 0;
  uint64_t end() const { return first + count; }
  bool Contains(uint64_t gfn) const { return gfn >= first && gfn - first < count; }
  friend bool operator==(const GfnRange&, const GfnRange&) = default;
};

class ScanWindow {
 public:
  // Scans `ranges` (guest RAM, possibly with holes) `window_pages` at a time;
  // `align_pages` rounds window edges (512 for 2 MiB pages).
  ScanWindow(std::vector<GfnRange> ranges, uint64_t window_pages, uint64_t align_pages = 1);

  // The next window: one or more ranges totalling at most window_pages
  // (fewer at the end of RAM before wrapping).
  std::vector<GfnRange> Next();

  uint64_t total_pages() const { return total_pages_; }
  uint64_t window_pages() const { return window_pages_; }
  uint64_t wraps() const { return wraps_; }

 private:
  std::vector<GfnRange> ranges_;
  uint64_t total_pages_ = 0;
  uint64_t window_pages_;
  uint64_t cursor_ = 0;  // offset into the concatenation of ranges_
  uint64_t wraps_ = 0;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_SCAN_WINDOW_H_
