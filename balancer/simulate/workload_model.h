// What each vCPU of a simulated guest touches over time: the workload half
// of `numavm simulate`. A workload is a list of phases; in each, a set of
// access streams - vCPU v visits the pages of a range at random at a given
// rate, writing a given share of the time. The shapes are those of
// guest-tools (numa01, numa01_thread_alloc, numa02, numa02_smt, the _read
// variants, shared, phase, idle) plus parameterised ones that no benchmark
// was tuned for: unequal groups, ownership handed from vCPU to vCPU, slow
// drift of ownership, and hot pages every vCPU writes.
//
// Rates are page visits per second: a vCPU streaming `rate` bytes/s over a
// range visits each of its pages rate/4096/pages times a second. Nothing is
// stored per page: a phase is a few streams, whatever the guest's size.
#ifndef NUMAVM_BALANCER_SIMULATE_WORKLOAD_MODEL_H_
#define NUMAVM_BALANCER_SIMULATE_WORKLOAD_MODEL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "balancer/sampling/scan_window.h"

namespace numavm {

struct AccessStream {
  int vcpu = 0;
  GfnRange range;
  double visits_per_second = 0;  // over the whole range
  double write_fraction = 1;
};

// A stretch of the guest where the same streams cover every page.
struct Segment {
  GfnRange range;
  std::vector<int> streams;    // indices into the phase's streams
  double visits_per_page = 0;  // per second, all streams together
};

struct WorkloadPhase {
  absl::Duration start;
  std::string label;
  std::vector<AccessStream> streams;
  std::vector<Segment> segments;  // sorted, disjoint; only covered stretches
};

// "numa02" or "numa02:size=8G,rate=1G": a shape and its parameters.
struct WorkloadSpec {
  std::string shape;
  std::map<std::string, std::string> params;
};
absl::StatusOr<WorkloadSpec> ParseWorkloadSpec(absl::string_view text);

class WorkloadModel {
 public:
  // `seconds`: how long the simulation runs (phase splits at its half).
  static absl::StatusOr<WorkloadModel> Build(const WorkloadSpec& spec, int vcpus,
                                             uint64_t guest_pages, absl::Duration seconds);

  const std::string& name() const { return name_; }
  int vcpus() const { return vcpus_; }
  // Pages the workload uses, [0, working_set_pages): first touched at boot.
  uint64_t working_set_pages() const { return working_set_pages_; }
  const std::vector<WorkloadPhase>& phases() const { return phases_; }
  // The phase in force at `t`.
  size_t PhaseAt(absl::Duration t) const;
  // Whether vCPU v runs (has work) in phase `p`.
  bool Busy(size_t phase, int vcpu) const;
  // The vCPU that uses page `gfn` most in the first phase (-1: nobody):
  // where `--first-touch spread` puts it.
  int OwnerAtStart(uint64_t gfn) const;

  static std::vector<std::string> ShapeNames();

 private:
  std::string name_;
  int vcpus_ = 0;
  uint64_t working_set_pages_ = 0;
  std::vector<WorkloadPhase> phases_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SIMULATE_WORKLOAD_MODEL_H_
