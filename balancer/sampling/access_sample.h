// What a sampler saw: a guest page, who touched it (if known), how, and when.
#ifndef NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLE_H_
#define NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLE_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"

namespace numavm {

enum class AccessKind : uint8_t { kRead, kWrite };

inline constexpr int kUnknownVcpu = -1;

struct AccessSample {
  uint64_t gfn = 0;  // guest frame number (4 KiB pages)
  int32_t vcpu = kUnknownVcpu;
  AccessKind kind = AccessKind::kWrite;
  absl::Duration at;  // since the sampler's clock started
};

using AccessBatch = std::vector<AccessSample>;

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_ACCESS_SAMPLE_H_
