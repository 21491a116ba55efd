// The NUMA lab's results, read back from its serial console: one entry per
// (nodes, workload, mode) run with what the comparison table shows.
#ifndef NUMAVM_TESTS_LAB_LAB_RESULTS_H_
#define NUMAVM_TESTS_LAB_LAB_RESULTS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace numavm::lab {

struct LabRun {
  int nodes = 0;
  std::string workload, mode;
  int vcpus = 0;
  int exit_code = -1;
  nlohmann::json report;  // numavm run --report=json
  // Sampled, recent window at the end: numavm's samples, or for the
  // kernel's rows its own NUMA fault counts per thread (LAB-KFAULTS).
  std::optional<double> access;
  std::optional<std::pair<uint64_t, uint64_t>> kernel_faults;  // local, all
  std::optional<double> placement;  // declared memory on its vCPUs' nodes
  uint64_t pages_migrated = 0;      // the kernel's pgmigrate_success over the run
  uint64_t kernel_numa_migrated = 0;
  // Every /proc/vmstat delta of the run (numa_pte_updates, numa_hint_faults,
  // numa_hint_faults_local, numa_pages_migrated, pgmigrate_success, ...).
  std::map<std::string, uint64_t> counters;
  int lab_failures = 0;              // boots the lab broke in this run (LAB-FAIL)
  double balancer_cpu_seconds = -1;  // numavm's sampling+balancing thread; -1: n/a
  uint64_t guest_bytes = 0;
  std::optional<uint64_t> mismatches;  // verify's result (empty: none reported)
  // When the lab let the VM's vCPUs and memory go anywhere: the cpuset of
  // the first touch widened (LAB-WIDEN, seconds after numavm started); empty
  // for modes without that first touch.
  std::optional<double> widened;
  // A Linux guest (workload linux): numabench's MiB/s, summed over its
  // processes, and the guest kernel's own NUMA vmstat counters at the end.
  std::optional<double> guest_mib_per_second;
  std::map<std::string, uint64_t> guest_counters;
};

// Parses console logs (LAB: up ... nodes: N, LAB-JSON, LAB-VMSTAT,
// LAB-KFAULTS lines).
// A case is (nodes, workload, mode, vCPUs); a re-run replaces the earlier.
std::vector<LabRun> ParseLabLog(const std::string& text);

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

// The comparison table (HARD of the same nodes and workload is the yardstick).
std::string LabTable(const std::vector<LabRun>& runs);

// One convergence plot per (nodes, workload): every mode's placement
// locality over time (HARD dashed). Returns (file name, SVG text).
std::vector<std::pair<std::string, std::string>> LabPlots(const std::vector<LabRun>& runs);

}  // namespace numavm::lab

#endif  // NUMAVM_TESTS_LAB_LAB_RESULTS_H_
