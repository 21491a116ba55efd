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

std::vector<std::unique_ptr<uint8_t[]>> EvictedPages::Buffers(size_t n) {
  std::vector<std::unique_ptr<uint8_t[]>> out(n);
  size_t i = 0;
  {
    absl::MutexLock lock(&mu_);
    for (; i < n && !spare_.empty(); ++i) {
      out[i] = std::move(spare_.back());
      spare_.pop_back();
    }
  }
  for (; i < n; ++i) out[i] = std::make_unique<uint8_t[]>(kPageBytes);
  return out;
}

void EvictedPages::Put(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node) {
  absl::MutexLock lock(&mu_);
  PutLocked(gfn, std::move(bytes), node);
}

void EvictedPages::PutRun(uint64_t first_gfn, std::vector<std::unique_ptr<uint8_t[]>>& bytes,
                          const std::vector<int>& nodes) {
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < bytes.size(); ++i) {
    PutLocked(first_gfn + i, std::move(bytes[i]), i < nodes.size() ? nodes[i] : -1);
  }
}

void EvictedPages::PutLocked(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node) {
  Page& page = pages_[gfn];
  if (page.bytes && spare_.size() < kMaxSpare) spare_.push_back(std::move(page.bytes));
  page.gfn = gfn;
  page.node = node;
  page.bytes = std::move(bytes);
  count_.store(pages_.size(), std::memory_order_relaxed);
}

std::optional<EvictedPages::Page> EvictedPages::Take(uint64_t gfn) {
  absl::MutexLock lock(&mu_);
  auto it = pages_.find(gfn);
  if (it == pages_.end()) return std::nullopt;
  Page page = std::move(it->second);
  pages_.erase(it);
  count_.store(pages_.size(), std::memory_order_relaxed);
  return page;
}

bool EvictedPages::Retarget(uint64_t gfn, int node) {
  // A page put meanwhile was read on its old node after this move was
  // decided; the move of it is then retried as any failed one.
  if (count_.load(std::memory_order_relaxed) == 0) return false;
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
  count_.store(0, std::memory_order_relaxed);
  return all;
}

uint64_t EvictedPages::size() const {
  absl::MutexLock lock(&mu_);
  return pages_.size();
}

}  // namespace numavm
