#include "balancer/actuation/pfn_nodes.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/errno_status.h"

namespace numavm {
namespace {

constexpr uint64_t kPresent = 1ull << 63;
constexpr uint64_t kPfnMask = (1ull << 55) - 1;

// The number after `key` on a zoneinfo line ("spanned  123", "start_pfn: 1").
bool Value(absl::string_view line, absl::string_view key, uint64_t& out) {
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, key)) return false;
  absl::ConsumePrefix(&line, ":");
  return absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &out);
}

}  // namespace

absl::StatusOr<PfnNodeMap> PfnNodeMap::Parse(absl::string_view zoneinfo) {
  PfnNodeMap map;
  int node = -1;
  uint64_t spanned = 0;
  bool have_spanned = false;
  for (absl::string_view line : absl::StrSplit(zoneinfo, '\n')) {
    absl::string_view l = line;
    if (absl::ConsumePrefix(&l, "Node ")) {
      const std::vector<absl::string_view> f = absl::StrSplit(l, ',');
      if (!absl::SimpleAtoi(f[0], &node)) {
        return absl::InvalidArgumentError(absl::StrCat("zoneinfo: bad zone line: ", line));
      }
      have_spanned = false;
      continue;
    }
    uint64_t v = 0;
    if (Value(line, "spanned", v)) {
      spanned = v;
      have_spanned = true;
    } else if (Value(line, "start_pfn", v) && node >= 0 && have_spanned) {
      if (spanned > 0) map.zones_.push_back({v, v + spanned, node});
      have_spanned = false;
    }
  }
  if (map.zones_.empty()) return absl::InvalidArgumentError("zoneinfo: no zone with pages");
  std::sort(map.zones_.begin(), map.zones_.end(),
            [](const Zone& a, const Zone& b) { return a.start < b.start; });
  return map;
}

absl::StatusOr<PfnNodeMap> PfnNodeMap::FromSystem() {
  std::ifstream in("/proc/zoneinfo");
  if (!in) return absl::UnavailableError("cannot read /proc/zoneinfo");
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str());
}

int PfnNodeMap::NodeOf(uint64_t pfn) const {
  auto it = std::upper_bound(zones_.begin(), zones_.end(), pfn,
                             [](uint64_t p, const Zone& z) { return p < z.start; });
  if (it == zones_.begin()) return -1;
  --it;
  return pfn < it->end ? it->node : -1;
}

absl::StatusOr<uint64_t> ResolveUnseenPages(pid_t pid, const std::vector<void*>& pages,
                                            const PfnNodeMap& map, std::vector<int>& status) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/pagemap") : absl::StrCat("/proc/", pid, "/pagemap");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  uint64_t resolved = 0;
  std::vector<uint64_t> entries;
  const size_t n = std::min(pages.size(), status.size());
  // One read per run of unseen pages at consecutive addresses.
  for (size_t i = 0; i < n;) {
    if (status[i] != -ENOENT) {
      ++i;
      continue;
    }
    const uintptr_t first = reinterpret_cast<uintptr_t>(pages[i]) / 4096;
    size_t run = 1;
    while (i + run < n && run < 4096 && status[i + run] == -ENOENT &&
           reinterpret_cast<uintptr_t>(pages[i + run]) / 4096 == first + run) {
      ++run;
    }
    entries.resize(run);
    const ssize_t want = static_cast<ssize_t>(run * sizeof(uint64_t));
    if (::pread(fd, entries.data(), want, static_cast<off_t>(first * 8)) == want) {
      for (size_t k = 0; k < run; ++k) {
        const uint64_t e = entries[k];
        if (!(e & kPresent) || (e & kPfnMask) == 0) continue;
        const int node = map.NodeOf(e & kPfnMask);
        if (node < 0) continue;
        status[i + k] = node;
        ++resolved;
      }
    }
    i += run;
  }
  ::close(fd);
  return resolved;
}

}  // namespace numavm
