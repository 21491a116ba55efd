#include "vmm/host_memory.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace numavm {

HostMemoryInfo ParseMeminfo(absl::string_view text) {
  HostMemoryInfo info;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (f.size() < 2) continue;
    uint64_t v = 0;
    if (!absl::SimpleAtoi(f[1], &v)) continue;
    uint64_t scale = f.size() >= 3 && f[2] == "kB" ? 1024 : 1;
    if (f[0] == "MemTotal:") info.total_bytes = v * scale;
    if (f[0] == "MemAvailable:") info.available_bytes = v * scale;
    if (f[0] == "HugePages_Total:") info.huge_pages_total = v;
    if (f[0] == "HugePages_Free:") info.huge_pages_free = v;
  }
  return info;
}

absl::StatusOr<HostMemoryInfo> ReadHostMemoryInfo(const char* path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(std::string("cannot read ") + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseMeminfo(ss.str());
}

}  // namespace numavm
