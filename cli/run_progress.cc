#include "cli/run_progress.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/size.h"

namespace numavm {
namespace {

// Per-vCPU figures are listed up to this many vCPUs; beyond, the least
// and the most.
constexpr size_t kListedVcpus = 8;

}  // namespace

std::string ProgressLine(const ProgressInputs& in) {
  uint64_t total = 0, least = UINT64_MAX, most = 0;
  for (uint64_t b : in.vcpu_bytes) {
    total += b;
    least = std::min(least, b);
    most = std::max(most, b);
  }
  std::string line = absl::StrFormat("numavm: %.1f s | guest work %s",
                                     absl::ToDoubleSeconds(in.elapsed), FormatSize(total));
  if (in.vcpu_bytes.size() > 1 && in.vcpu_bytes.size() <= kListedVcpus) {
    absl::StrAppend(&line, " (vCPU");
    for (size_t v = 0; v < in.vcpu_bytes.size(); ++v) {
      absl::StrAppend(&line, v == 0 ? " " : ", ", v, ": ", FormatSize(in.vcpu_bytes[v]));
    }
    absl::StrAppend(&line, ")");
  } else if (in.vcpu_bytes.size() > kListedVcpus) {
    absl::StrAppend(&line, " (per vCPU ", FormatSize(least), " to ", FormatSize(most), ")");
  }
  if (in.sampler == nullptr || in.balancer == nullptr) return line;
  const BalancerCounters& c = *in.balancer;
  absl::StrAppend(&line, " | samples ", in.sampler->samples, " | access locality ");
  if (c.attributed == 0) {
    absl::StrAppend(&line, "-");
  } else {
    absl::StrAppend(&line, absl::StrFormat("%.1f%%", 100 * c.locality()));
    if (c.window_attributed) {
      absl::StrAppend(&line, absl::StrFormat(" (recent %.1f%%)", 100 * c.window_locality()));
    }
  }
  absl::StrAppend(&line, " | migrated ", FormatSize(c.bytes_migrated), " (", c.pages_migrated,
                  " pages) | vCPU moves ", c.vcpu_moves, " | scan period ",
                  absl::FormatDuration(absl::Trunc(in.scan_period, absl::Milliseconds(1))));
  return line;
}

}  // namespace numavm
