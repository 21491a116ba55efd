#include "cli/run_registration.h"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "balancer/actuation/page_nodes.h"

namespace numavm {

VmReport RunVmReport(const RunRegistrationInputs& in) {
  VmReport r;
  r.name = in.name;
  r.kind = "numavm-run";
  r.manager = "numavm run";
  r.mode = in.mode;
  r.pid = getpid();
  r.vcpus = in.vm->config().vcpus;
  r.memory_bytes = in.vm->memory().total_bytes();
  std::vector<HostRange> ranges;
  for (const GuestRegion& g : in.vm->memory().regions()) {
    ranges.push_back(HostRange{reinterpret_cast<uintptr_t>(g.host()), g.bytes});
  }
  if (absl::StatusOr<NodeUsage> usage = QueryPageNodes(0, ranges, in.backing_page_bytes);
      usage.ok()) {
    r.memory_per_node = usage->bytes_per_node;
  }
  for (int n : in.view->VcpuNodes()) {
    if (n >= 0 && n < in.topology->node_count()) ++r.vcpus_per_node[in.topology->nodes[n].id];
  }
  r.placement_locality = PlacementLocality(r.vcpus_per_node, r.memory_per_node);
  const BalancerCounters c = in.balancer->counters();
  if (c.window_attributed > 0) {
    r.access_locality = c.window_locality();
  } else if (c.attributed > 0) {
    r.access_locality = c.locality();
  }
  if (r.access_locality) r.access_source = "numavm";
  r.pages_migrated = c.pages_migrated;
  r.bytes_migrated = c.bytes_migrated;
  r.migration_failures = c.migration_failures;
  r.vcpu_moves = c.vcpu_moves;
  r.balancer_cpu_seconds = absl::ToDoubleSeconds(c.cpu_time);
  r.status = "running";
  return r;
}

std::unique_ptr<ControlServer> RegisterRunVm(RunRegistrationInputs in) {
  absl::StatusOr<std::unique_ptr<ControlServer>> server = ControlServer::Start(
      RuntimeDir(), absl::StrCat("run-", getpid()), [in](const std::string& request) {
        absl::string_view r = absl::StripAsciiWhitespace(request);
        if (r == "report") {
          nlohmann::json j = {{"process", "numavm run"},
                              {"pid", getpid()},
                              {"vms", nlohmann::json::array({ToJson(RunVmReport(in))})}};
          return j.dump();
        }
        if (absl::StartsWith(r, "detach")) {
          return std::string("error: a numavm run VM is not attached; stop it instead");
        }
        return absl::StrCat("error: unknown request '", r, "'");
      });
  if (!server.ok()) {
    std::fprintf(stderr, "numavm run: not visible to 'numavm report': %s\n",
                 std::string(server.status().message()).c_str());
    return nullptr;
  }
  return std::move(*server);
}

}  // namespace numavm
