// The PlacementView of a libvirt domain, from outside: guest pages are
// pages of the QEMU process's cell mappings (move_pages queries and moves
// on its pid), vCPUs are where libvirt says they run (virDomainGetVcpus) -
// or, for a vCPU numavm gave a one-node home, that node: a vCPU idle since
// it was pinned still reports its old CPU, and its memory must follow the
// pinning, not the past.
//
// The guest's pages are numbered cell by cell, each cell's first page on a
// 2 MiB boundary, so that no region spans two cells.
#ifndef NUMAVM_BALANCER_LIBVIRT_DOMAIN_PLACEMENT_VIEW_H_
#define NUMAVM_BALANCER_LIBVIRT_DOMAIN_PLACEMENT_VIEW_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <vector>

#include "balancer/actuation/page_migrator.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/actuation/spare_cpus.h"
#include "balancer/placement_view.h"
#include "balancer/topology/topology.h"

namespace numavm {

class DomainPlacementView final : public PlacementView {
 public:
  struct CellRam {
    uint64_t first_page = 0;  // gfn
    HostRange host;
  };
  // Host CPU each vCPU ran on last (-1: unknown); an error: none known.
  using VcpuCpus = std::function<absl::StatusOr<std::vector<int>>()>;
  // Pins a vCPU to host CPUs (through libvirt, the pinning saved first).
  using Pin = std::function<absl::Status(int vcpu, const std::vector<int>& cpus)>;

  DomainPlacementView(const Topology& topology, pid_t pid, std::vector<CellRam> ram,
                      VcpuCpus vcpu_cpus, Pin pin);

  // The limiter of this round (per host, shared by the domains; it may be
  // replaced on a reload). Must outlive the next MovePages.
  void set_limiter(RateLimiter* limiter);
  // Node index each vCPU's home is on when it is one node, else -1.
  void set_vcpu_homes(std::vector<int> homes) { homes_ = std::move(homes); }

  // Host address of a gfn, 0 outside the cells.
  uintptr_t HostAddress(uint64_t gfn) const;
  uint64_t pages() const;  // gfns, padding between cells included

  absl::StatusOr<std::vector<int>> PageNodes(const std::vector<uint64_t>& gfns) override;
  std::vector<int> VcpuNodes() override;
  absl::Status PinVcpu(int vcpu, int node) override;
  absl::StatusOr<MigrationOutcome> MovePages(const std::vector<std::pair<uint64_t, int>>& moves,
                                             absl::Duration now) override;

 private:
  const Topology& topology_;
  const pid_t pid_;
  const std::vector<CellRam> ram_;
  const VcpuCpus vcpu_cpus_;
  const Pin pin_;
  std::vector<int> node_index_of_cpu_;
  std::vector<int> homes_;
  RateLimiter* limiter_ = nullptr;
  SpareCpus spare_cpus_;
  std::unique_ptr<PageMigrator> migrator_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_DOMAIN_PLACEMENT_VIEW_H_
