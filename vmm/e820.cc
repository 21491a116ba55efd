#include "vmm/e820.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace numavm {

absl::StatusOr<std::vector<E820Entry>> BuildE820(uint64_t ram_bytes,
                                                 std::vector<E820Entry> reserved) {
  std::sort(reserved.begin(), reserved.end(),
            [](const E820Entry& a, const E820Entry& b) { return a.address < b.address; });
  for (size_t i = 0; i < reserved.size(); ++i) {
    const E820Entry& r = reserved[i];
    if (r.type == kE820Ram || r.bytes == 0 || r.address + r.bytes < r.address) {
      return absl::InvalidArgumentError(absl::StrCat("e820: reserved range 0x",
                                                     absl::Hex(r.address), "+0x",
                                                     absl::Hex(r.bytes), " is empty or RAM"));
    }
    if (i > 0 && reserved[i - 1].address + reserved[i - 1].bytes > r.address) {
      return absl::InvalidArgumentError(absl::StrCat("e820: reserved ranges at 0x",
                                                     absl::Hex(reserved[i - 1].address), " and 0x",
                                                     absl::Hex(r.address), " overlap"));
    }
  }
  std::vector<E820Entry> out;
  auto add = [&out](uint64_t address, uint64_t end, uint32_t type) {
    if (end <= address) return;
    if (!out.empty() && out.back().type == type &&
        out.back().address + out.back().bytes == address) {
      out.back().bytes = end - out.back().address;
    } else {
      out.push_back({address, end - address, type});
    }
  };
  uint64_t ram_at = 0;  // RAM below here is in `out`
  for (const E820Entry& r : reserved) {
    add(ram_at, std::min(r.address, ram_bytes), kE820Ram);
    add(r.address, r.address + r.bytes, r.type);
    ram_at = std::max(ram_at, r.address + r.bytes);
  }
  add(ram_at, ram_bytes, kE820Ram);
  if (out.size() > kMaxE820Entries) {
    return absl::InvalidArgumentError(
        absl::StrCat("e820: ", out.size(), " entries, the zero page holds ", kMaxE820Entries));
  }
  return out;
}

}  // namespace numavm
