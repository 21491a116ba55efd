// The NUMA lab's serial console, read back: one entry per (nodes,
// workload, mode, vCPUs) run with what the lab printed of it.
#ifndef NUMAVM_TESTS_LAB_LAB_LOG_H_
#define NUMAVM_TESTS_LAB_LAB_LOG_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
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

}  // namespace numavm::lab

#endif  // NUMAVM_TESTS_LAB_LAB_LOG_H_
