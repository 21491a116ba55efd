#include "balancer/actuation/page_nodes.h"

#include <numaif.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {
constexpr size_t kBatchPages = 4096;
}

absl::StatusOr<NodeUsage> QueryPageNodes(pid_t pid,
                                         std::span<const HostRange> ranges,
                                         uint64_t stride) {
  NodeUsage usage;
  std::vector<void*> pages;
  std::vector<int> status;
  pages.reserve(kBatchPages);
  status.resize(kBatchPages);
  auto flush = [&]() -> absl::Status {
    if (pages.empty()) return absl::OkStatus();
    long rc = move_pages(pid, pages.size(), pages.data(), nullptr, status.data(), 0);
    if (rc < 0) {
      return absl::InternalError(absl::StrCat("move_pages query of ", pages.size(),
                                              " pages: ", std::strerror(errno)));
    }
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

}  // namespace numavm
