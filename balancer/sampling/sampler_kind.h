// The access samplers by name (`--sampler`), for the VMM and the simulator.
#ifndef NUMAVM_BALANCER_SAMPLING_SAMPLER_KIND_H_
#define NUMAVM_BALANCER_SAMPLING_SAMPLER_KIND_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace numavm {

// hint: userfaultfd minor faults (memfd, hugetlbfs); wp: userfaultfd
// write-protect faults (anonymous memory); evict: userfaultfd missing
// faults on probes saved and freed (anonymous memory, reads too); prot:
// PROT_NONE hinting faults (reads too, where KVM names the faulting page);
// ring: KVM's per-vCPU dirty ring; dirtylog: KVM's VM-wide dirty log.
enum class SamplerKind { kOff, kHint, kWriteProtect, kEvict, kProtNone, kRing, kDirtyLog };

inline absl::StatusOr<SamplerKind> ParseSamplerKind(absl::string_view name) {
  if (name == "off") return SamplerKind::kOff;
  if (name == "hint") return SamplerKind::kHint;
  if (name == "wp") return SamplerKind::kWriteProtect;
  if (name == "evict") return SamplerKind::kEvict;
  if (name == "prot") return SamplerKind::kProtNone;
  if (name == "ring") return SamplerKind::kRing;
  if (name == "dirtylog") return SamplerKind::kDirtyLog;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown sampler '", name, "' (expected hint, wp, evict, prot, ring, dirtylog or off)"));
}

inline absl::string_view SamplerKindName(SamplerKind kind) {
  switch (kind) {
    case SamplerKind::kOff:
      return "off";
    case SamplerKind::kHint:
      return "hint";
    case SamplerKind::kWriteProtect:
      return "wp";
    case SamplerKind::kEvict:
      return "evict";
    case SamplerKind::kProtNone:
      return "prot";
    case SamplerKind::kRing:
      return "ring";
    case SamplerKind::kDirtyLog:
      return "dirtylog";
  }
  return "?";
}

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_SAMPLER_KIND_H_
