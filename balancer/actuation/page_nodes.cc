#include "balancer/actuation/page_nodes.h"

#include <numaif.h>
#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "balancer/actuation/pfn_nodes.h"
#include "base/errno_status.h"

namespace numavm {
namespace {
constexpr size_t kBatchPages = 4096;

// move_pages' -ENOENT for a page under a NUMA hinting entry, resolved from
// pagemap where the kernel shows frames (pfn_nodes.h); unknown stays so.
void ResolveUnseen(pid_t pid, const std::vector<void*>& pages, std::vector<int>& status) {
  static const absl::StatusOr<PfnNodeMap>* map =
      new absl::StatusOr<PfnNodeMap>(PfnNodeMap::FromSystem());
  if (!map->ok()) return;
  if (std::find(status.begin(), status.end(), -ENOENT) == status.end()) return;
  (void)ResolveUnseenPages(pid, pages, **map, status);
}

}  // namespace

absl::StatusOr<NodeUsage> QueryPageNodes(pid_t pid, std::span<const HostRange> ranges,
                                         uint64_t stride) {
  NodeUsage usage;
  std::vector<void*> pages;
  std::vector<int> status;
  pages.reserve(kBatchPages);
  auto flush = [&]() -> absl::Status {
    if (pages.empty()) return absl::OkStatus();
    status.resize(pages.size());
    long rc = move_pages(pid, pages.size(), pages.data(), nullptr, status.data(), 0);
    if (rc < 0) {
      return ErrnoStatus(errno, absl::StrCat("move_pages query of ", pages.size(), " pages"));
    }
    ResolveUnseen(pid, pages, status);
    for (size_t i = 0; i < pages.size(); ++i) {
      if (status[i] >= 0) {
        usage.bytes_per_node[status[i]] += stride;
      } else if (status[i] == -ENOENT || status[i] == -EFAULT) {
        usage.not_present_bytes += stride;
      } else {
        usage.other_bytes += stride;
      }
    }
    pages.clear();
    return absl::OkStatus();
  };
  for (const HostRange& r : ranges) {
    for (uint64_t off = 0; off < r.bytes; off += stride) {
      pages.push_back(reinterpret_cast<void*>(r.start + off));
      if (pages.size() == kBatchPages) {
        if (absl::Status s = flush(); !s.ok()) return s;
      }
    }
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  return usage;
}

absl::Status MapResidentPages(const HostRange& range, uint64_t page_bytes) {
  const uint64_t pages = range.bytes / 4096;
  std::vector<unsigned char> resident(pages);
  if (mincore(reinterpret_cast<void*>(range.start), range.bytes, resident.data()) != 0) {
    return ErrnoStatus(errno, "mincore");
  }
  const uint64_t step = page_bytes / 4096;
  for (uint64_t p = 0; p < pages; p += step) {
    if ((resident[p] & 1) == 0) continue;
    // A read maps the page-cache page; it is there, so nothing is allocated.
    volatile const uint8_t* page = reinterpret_cast<const uint8_t*>(range.start + p * 4096);
    (void)*page;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int>> QueryNodesOf(pid_t pid, const std::vector<void*>& pages) {
  std::vector<int> status(pages.size(), 0);
  constexpr size_t kBatch = 16384;
  for (size_t at = 0; at < pages.size(); at += kBatch) {
    const size_t n = std::min(kBatch, pages.size() - at);
    // move_pages takes a non-const array of addresses.
    std::vector<void*> batch(pages.begin() + at, pages.begin() + at + n);
    if (move_pages(pid, n, batch.data(), nullptr, status.data() + at, 0) < 0) {
      return ErrnoStatus(errno, absl::StrCat("move_pages query of process ", pid));
    }
  }
  ResolveUnseen(pid, pages, status);
  return status;
}

absl::StatusOr<std::vector<int>> QueryNodesOfAddresses(pid_t pid,
                                                       const std::vector<uintptr_t>& addresses) {
  std::vector<void*> pages;
  for (uintptr_t a : addresses) {
    if (a != 0) pages.push_back(reinterpret_cast<void*>(a));
  }
  absl::StatusOr<std::vector<int>> found = QueryNodesOf(pid, pages);
  if (!found.ok()) return found.status();
  std::vector<int> nodes(addresses.size(), -1);
  for (size_t i = 0, k = 0; i < addresses.size(); ++i) {
    if (addresses[i] != 0) nodes[i] = (*found)[k++];
  }
  return nodes;
}

}  // namespace numavm
