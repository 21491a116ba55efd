#include "balancer/sampling/scan_window.h"

#include <algorithm>

namespace numavm {

ScanWindow::ScanWindow(std::vector<GfnRange> ranges, uint64_t window_pages, uint64_t align_pages)
    : ranges_(std::move(ranges)) {
  for (const GfnRange& r : ranges_) total_pages_ += r.count;
  if (align_pages == 0) align_pages = 1;
  window_pages = (window_pages + align_pages - 1) / align_pages * align_pages;
  window_pages_ =
      std::clamp<uint64_t>(window_pages, std::min<uint64_t>(1, total_pages_), total_pages_);
}

std::vector<GfnRange> ScanWindow::Next() {
  std::vector<GfnRange> out;
  if (total_pages_ == 0) return out;
  if (cursor_ >= total_pages_) {
    cursor_ = 0;
    ++wraps_;
  }
  uint64_t want = std::min(window_pages_, total_pages_ - cursor_);
  uint64_t base = 0;  // offset of the current range in the concatenation
  for (const GfnRange& r : ranges_) {
    if (want == 0) break;
    if (cursor_ < base + r.count) {
      uint64_t skip = cursor_ - base;
      uint64_t take = std::min(want, r.count - skip);
      out.push_back(GfnRange{r.first + skip, take});
      cursor_ += take;
      want -= take;
    }
    base += r.count;
  }
  return out;
}

}  // namespace numavm
