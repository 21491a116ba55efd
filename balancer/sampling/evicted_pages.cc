#include "balancer/sampling/evicted_pages.h"

#include <utility>

namespace numavm {
namespace {

// Spare buffers kept for the next probes; more are freed.
constexpr size_t kMaxSpare = 1024;

}  // namespace

std::unique_ptr<uint8_t[]> EvictedPages::Buffer() {
  {
    absl::MutexLock lock(&mu_);
    if (!spare_.empty()) {
      std::unique_ptr<uint8_t[]> bytes = std::move(spare_.back());
      spare_.pop_back();
      return bytes;
    }
  }
  return std::make_unique<uint8_t[]>(kPageBytes);
}

void EvictedPages::Put(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node) {
  absl::MutexLock lock(&mu_);
  Page& page = pages_[gfn];
  if (page.bytes && spare_.size() < kMaxSpare) spare_.push_back(std::move(page.bytes));
  page.gfn = gfn;
  page.node = node;
  page.bytes = std::move(bytes);
}

std::optional<EvictedPages::Page> EvictedPages::Take(uint64_t gfn) {
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(gfn);
  if (it == pages_.end()) return std::nullopt;
  Page page = std::move(it->second);
  pages_.erase(it);
  return page;
}

bool EvictedPages::Retarget(uint64_t gfn, int node) {
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(gfn);
  if (it == pages_.end()) return false;
  it->second.node = node;
  return true;
}

void EvictedPages::Recycle(std::unique_ptr<uint8_t[]> bytes) {
  if (!bytes) return;
  absl::MutexLock lock(&mu_);
  if (spare_.size() < kMaxSpare) spare_.push_back(std::move(bytes));
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
