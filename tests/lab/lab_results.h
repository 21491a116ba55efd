// What the NUMA lab's runs (tests/lab/lab_log.h) add up to: convergence
// times against HARD, the comparison table and the convergence plots.
#ifndef NUMAVM_TESTS_LAB_LAB_RESULTS_H_
#define NUMAVM_TESTS_LAB_LAB_RESULTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tests/lab/lab_log.h"

namespace numavm::lab {

// Guest bytes processed (all vCPUs) before the run's access locality first
// reached `target`; empty if it never did.
std::optional<uint64_t> BytesBeforeLocality(const LabRun& run, double target);

// Where a run's convergence clock starts: the guest's first touch is over
// (its "run" phase began) and, for modes with a first touch through a
// cpuset, the cpuset widened. Before it every mode's placement is what the
// lab forced. 0 if the report says neither.
double ConvergenceStart(const LabRun& run);

// From the run's placement series (numavm run --placement-interval): the
// first moment after ConvergenceStart from which the declared memory's
// placement locality stayed at `target` or above to the end - reached and
// held, so that a state the lab forced (every vCPU still on node 0) does
// not count - in seconds since that start and in guest bytes processed
// since it; empty if never.
struct Reached {
  double seconds = 0;
  uint64_t guest_bytes = 0;
};
std::optional<Reached> PlacementReached(const LabRun& run, double target);
// The first reading after ConvergenceStart at `target` or above, held or
// not, in seconds since that start; empty if none. Where the placement
// was ever under `target`, the first such reading after it was: before
// that the lab's forced start may still show (every vCPU on node 0).
std::optional<double> PlacementFirstReached(const LabRun& run, double target);

// The comparison table (HARD of the same nodes and workload is the yardstick).
std::string LabTable(const std::vector<LabRun>& runs);

// One convergence plot per (nodes, workload): every mode's placement
// locality over time (HARD dashed). Returns (file name, SVG text).
std::vector<std::pair<std::string, std::string>> LabPlots(const std::vector<LabRun>& runs);

}  // namespace numavm::lab

#endif  // NUMAVM_TESTS_LAB_LAB_RESULTS_H_
