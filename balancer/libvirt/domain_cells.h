// A libvirt domain's guest NUMA cells (<cpu><numa><cell id= cpus= memory=
// unit=/>), from its XML (virDomainGetXMLDesc, read-only: no taint), and
// where each cell's RAM is in the QEMU process.
//
// QEMU gives each cell its own memory backend ("ram-node0", ...) and maps
// them in order, each below the one before (Linux hands out mmap space top
// down): the backends are found as the run of writable mappings whose
// sizes, from the highest address down, are the cells' sizes in order.
// Names do not help: a memfd backend is "memory-backend-memfd" whatever
// its cell, anonymous ones have none.
#ifndef NUMAVM_BALANCER_LIBVIRT_DOMAIN_CELLS_H_
#define NUMAVM_BALANCER_LIBVIRT_DOMAIN_CELLS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/libvirt/qemu_process.h"

namespace numavm {

struct DomainCell {
  int id = 0;
  std::vector<int> vcpus;
  uint64_t bytes = 0;
  // <numatune><memnode cellid=ID mode= nodeset=/>: empty when none.
  std::string memnode_mode, memnode_nodeset;
};

// The cells of the domain XML `xml` with `vcpus` vCPUs; empty when it has
// none. InvalidArgument for a cell that names a vCPU the domain does not
// have, names one twice, or has no memory.
absl::StatusOr<std::vector<DomainCell>> ParseDomainCells(absl::string_view xml, int vcpus);

// Each cell's RAM in `maps` (see above); FailedPrecondition when no run of
// mappings matches, or more than one does.
absl::StatusOr<std::vector<HostRange>> FindCellRam(const std::vector<MapsEntry>& maps,
                                                   const std::vector<DomainCell>& cells);

// A domain's guest RAM as cells, each with its range in the QEMU process:
// the parsed `cells` when there are two or more (FindCellRam); else one
// cell of all `vcpus` vCPUs over the RAM mapping of `max_memory` bytes (a
// balloon shrinks the current memory, never the mapping), bound as the one
// parsed cell's <memnode> binds it, if any. FailedPrecondition when the
// RAM is not found.
struct DomainRam {
  std::vector<DomainCell> cells;
  std::vector<HostRange> ranges;  // ranges[i]: cells[i]'s RAM
};
absl::StatusOr<DomainRam> FindDomainRam(const std::vector<MapsEntry>& maps,
                                        std::vector<DomainCell> cells, int vcpus,
                                        uint64_t max_memory);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_DOMAIN_CELLS_H_
