#include "balancer/sampling/evicted_pages.h"

#include <cstring>
#include <utility>

namespace numavm {
namespace {

// Spare buffers kept for the next probes; more are freed.
constexpr size_t kMaxSpare = 1024;

}  // namespace

void EvictedPages::Put(uint64_t gfn, const uint8_t* host, int node) {
  absl::MutexLock lock(&mu_);
  Page& page = pages_[gfn];
  if (!page.bytes) {
    if (!spare_.empty()) {
      page.bytes = std::move(spare_.back());
      spare_.pop_back();
    } else {
      page.bytes = std::make_unique<uint8_t[]>(kPageBytes);
    }
  }
  page.gfn = gfn;
  page.node = node;
  std::memcpy(page.bytes.get(), host, kPageBytes);
}

std::optional<EvictedPages::Page> EvictedPages::Take(uint64_t gfn) {
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(gfn);
  if (it == pages_.end()) return std::nullopt;
  Page page = std::move(it->second);
  pages_.erase(it);
  return page;
}

void EvictedPages::Recycle(Page page) {
  if (!page.bytes) return;
  absl::MutexLock lock(&mu_);
  if (spare_.size() < kMaxSpare) spare_.push_back(std::move(page.bytes));
}

std::vector<EvictedPages::Page> EvictedPages::TakeAll() {
  absl::MutexLock lock(&mu_);
  std::vector<Page> all;
  all.reserve(pages_.size());
  for (auto& [gfn, page] : pages_) all.push_back(std::move(page));
  pages_.clear();
  return all;
}

uint64_t EvictedPages::size() const {
  absl::MutexLock lock(&mu_);
  return pages_.size();
}

}  // namespace numavm
