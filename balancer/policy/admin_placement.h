// An administrator's placement of a libvirt domain, as constraints numavm
// plans within (pure): the CPUs each vCPU may run on (<vcpupin>,
// <vcpu cpuset=>, placement='auto', virsh vcpupin - all read back as the
// pinning found at attach) and the nodes memory is bound to (<numatune>
// <memory>, and <memnode> per guest cell). A cell's home may use only the
// nodes every one of its vCPUs may run on and its memory may be on; each
// vCPU is then pinned to its home's CPUs among those it may run on, never
// outside them. What cannot be planned within - memory the administrator
// interleaves (concentrating it would undo that), vCPUs of one cell that
// may share no node - is left alone, and the reason is said.
#ifndef NUMAVM_BALANCER_POLICY_ADMIN_PLACEMENT_H_
#define NUMAVM_BALANCER_POLICY_ADMIN_PLACEMENT_H_

#include <string>
#include <vector>

#include "balancer/topology/topology.h"

namespace numavm {

struct MemoryBinding {
  std::string mode;     // strict, preferred, restrictive, interleave; empty: none
  std::string nodeset;  // as libvirt prints it ("0-1,3"); empty: none
  std::string what;     // where it comes from, for the reason ("<numatune>", ...)
};

struct CellConstraints {
  std::vector<bool> allowed;  // by node index: nodes the cell's home may use
  bool constrained = false;   // the administrator narrowed something
  std::string why;            // what, in words (empty when unconstrained)
  std::string refused;        // not empty: numavm cannot plan within this
};

// `may_run_on[v]`: the CPUs vCPU v may run on; `vcpus`: the cell's vCPUs;
// `bindings`: the domain's and the cell's memory bindings.
CellConstraints ConstrainCell(const Topology& topology,
                              const std::vector<std::vector<int>>& may_run_on,
                              const std::vector<int>& vcpus,
                              const std::vector<MemoryBinding>& bindings);

// The CPUs to pin a vCPU to: the `home` nodes' CPUs (node indices) that it
// may run on, ascending; all of `may_run_on` if none of them.
std::vector<int> PinWithin(const Topology& topology, const std::vector<int>& home,
                           const std::vector<int>& may_run_on);

// <emulatorpin>: QEMU's emulator and I/O threads, which numavm never pins,
// stay on `emulator_cpus` (read back live, as the vCPUs' pinning is). It
// narrows no home - those threads follow the administrator, not the vCPUs -
// but an operator should see where they are beside the homes: "emulator
// threads stay on CPUs 0,1 (node 0), where the administrator pinned them".
// Empty when they may run on every CPU of `topology` (not pinned).
std::string EmulatorPinNote(const Topology& topology, std::vector<int> emulator_cpus);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_POLICY_ADMIN_PLACEMENT_H_
