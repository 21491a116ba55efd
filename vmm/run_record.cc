#include "vmm/run_record.h"

namespace numavm {

double VcpuRecord::BytesPerSecond() const {
  if (progress.size() >= 3) {
    const ProgressSample& first = progress.front();
    const ProgressSample& last = progress.back();
    double seconds = absl::ToDoubleSeconds(last.at - first.at);
    if (seconds > 0) return static_cast<double>(last.bytes - first.bytes) / seconds;
  }
  if (progress.empty() || !started) return 0;
  double seconds = absl::ToDoubleSeconds(progress.back().at - *started);
  return seconds > 0 ? static_cast<double>(progress.back().bytes) / seconds : 0;
}

std::optional<uint64_t> RunRecord::SumResult(const std::string& key) const {
  std::optional<uint64_t> sum;
  for (const ResultEntry& r : results) {
    if (r.key == key) sum = sum.value_or(0) + r.value;
  }
  return sum;
}

}  // namespace numavm
