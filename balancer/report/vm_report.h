// One VM's locality report - the same shape for a bundled `numavm run` VM
// and a libvirt domain - as JSON (control sockets, `numavm report --json`),
// a table, and Prometheus text (`numavm daemon`'s /metrics).
#ifndef NUMAVM_BALANCER_REPORT_VM_REPORT_H_
#define NUMAVM_BALANCER_REPORT_VM_REPORT_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace numavm {

struct VmReport {
  std::string name;
  std::string uuid;     // a libvirt domain's UUID; empty for numavm run VMs
  std::string kind;     // "numavm-run" or "libvirt"
  std::string manager;  // who balances it: "numavm run", "numavm attach", "numavm daemon", "none"
  std::string mode;     // off, advise, on/enforce
  int pid = 0;          // the VMM process
  int vcpus = 0;
  uint64_t memory_bytes = 0;
  std::map<int, uint64_t> memory_per_node;  // host node id -> bytes resident
  std::map<int, int> vcpus_per_node;        // host node id -> vCPUs last ran there
  std::vector<int> home_nodes;              // host node ids (attach/daemon)
  double placement_locality = 0;            // memory share on the vCPUs' nodes
  std::optional<double> access_locality;
  // Who measured access_locality: "numavm" (its VMM's samples) or "kernel"
  // (a libvirt domain's vCPU threads' NUMA fault counts, with the host
  // kernel's balancing on); empty without one.
  std::string access_source;
  uint64_t pages_migrated = 0;
  uint64_t bytes_migrated = 0;
  uint64_t migration_failures = 0;
  uint64_t vcpu_moves = 0;
  double balancer_cpu_seconds = 0;
  std::string status;  // "balancing", "advising", "detached", an error...
};

// Expected share of accesses that are local if every vCPU touched all of
// the VM's memory alike: sum over nodes of (vCPU share) x (memory share).
double PlacementLocality(const std::map<int, int>& vcpus_per_node,
                         const std::map<int, uint64_t>& memory_per_node);

nlohmann::json ToJson(const VmReport& r);
absl::StatusOr<VmReport> VmReportFromJson(const nlohmann::json& j);

std::string ReportsToTable(const std::vector<VmReport>& reports);
// Prometheus text exposition format 0.0.4, one series per VM (labels
// domain= - the VM's name, as libvirt-exporter names it -, uuid=, kind=)
// and node (node=) where it applies; numavm_vm_info carries the manager,
// the balance mode and the home nodes.
std::string ReportsToPrometheus(const std::vector<VmReport>& reports);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPORT_VM_REPORT_H_
