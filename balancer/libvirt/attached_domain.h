// One libvirt domain under numavm's care, from outside: its QEMU process,
// guest RAM mappings (one per guest NUMA cell) and original vCPU pinning
// are found at attach; each Step measures placement (move_pages queries on
// the QEMU pid, the CPUs its vCPUs last ran on), chooses each cell's home
// node(s) across the host's domains (policy/home_node.h), pins the cell's
// vCPUs there (virDomainPinVcpu) and hands the cell's memory to the same
// VmBalancer that balances `numavm run` VMs - policy, region batches, rate
// limit and counters - through a DomainPlacementView. Detach puts the
// original pinning back.
//
// Per-page access tracking of another process is not used (DAMON's
// virtual-address operations exist in the lab's 6.12 kernel, but numavm
// does not read them yet: docs/libvirt.md), so the balancer's samples come
// from the guest's cells (sampling/cell_samples.h): a cell's memory belongs with the
// cell's vCPUs, and a domain without cells is one cell, as ESXi treats a VM
// as one NUMA client with a home.
#ifndef NUMAVM_BALANCER_LIBVIRT_ATTACHED_DOMAIN_H_
#define NUMAVM_BALANCER_LIBVIRT_ATTACHED_DOMAIN_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "balancer/actuation/node_load.h"
#include "balancer/actuation/page_nodes.h"
#include "balancer/actuation/rate_limiter.h"
#include "balancer/balance_mode.h"
#include "balancer/libvirt/domain_placement_view.h"
#include "balancer/libvirt/libvirt_api.h"
#include "balancer/libvirt/pinning_record.h"
#include "balancer/policy/admin_placement.h"
#include "balancer/report/vm_report.h"
#include "balancer/sampling/cell_samples.h"
#include "balancer/topology/topology.h"
#include "balancer/vm_balancer.h"

namespace numavm {

struct DomainOptions {
  // on: pin vCPUs to the home node and move memory there; advise: say so
  // in the status, change nothing; off: measure only.
  BalanceMode mode = BalanceMode::kOn;
  // Pages queried per step (the whole RAM is covered over several steps;
  // until then the report and the homes use the kernel's per-node count).
  uint64_t scan_pages_per_step = 256 * 1024;
  // 2 MiB regions sampled per step for the balancer (4 pages each): 8 GiB,
  // so that a 1 TiB domain is visited in 128 steps.
  uint64_t sample_regions_per_step = 4096;
  // Re-pin and move domains whose placement the administrator set (vCPUs
  // pinned by the configuration, memory bound by <numatune>); by default
  // numavm keeps its hands off them.
  bool override_pinning = false;
  // Where the lock and the pinning record live (balancer/libvirt/
  // pinning_record.h); empty: neither (`numavm report` measuring a domain
  // it does not attach).
  std::string runtime_dir;
};

class AttachedDomain {
 public:
  // Finds the QEMU process and guest RAM, records the original pinning,
  // and measures placement once (report() is never of an unmeasured domain).
  static absl::StatusOr<std::unique_ptr<AttachedDomain>> Attach(const LibvirtConnection& conn,
                                                                LibvirtDomain domain,
                                                                const Topology& topology,
                                                                DomainOptions options);

  // After libvirt was reconnected: the same domain through the new
  // connection. Everything learnt (original pinning, home, counters) is
  // kept; FailedPrecondition if it now runs in another QEMU process (a
  // restart: attach it afresh), NotFound if it is gone.
  absl::Status Rebind(LibvirtDomain domain);

  // One round. `busy_cpus[n]`: vCPUs of other domains homed on node index
  // n (busy_cpus() of each) and other work there, in CPUs. `limiter` (per host) bounds page
  // migration. NotFound: the domain is gone (shut down, destroyed) - nothing else was disturbed.
  absl::Status Step(const std::vector<int>& busy_cpus, RateLimiter& limiter, absl::Duration now);

  // Restores the pinning found at attach (a no-op for a domain that is gone).
  absl::Status Detach();

  void set_mode(BalanceMode mode);
  const std::string& name() const { return name_; }
  int vcpus() const { return vcpus_; }
  int cells() const { return static_cast<int>(cells_.size()); }
  // vCPUs homed on each node index (a cell's vCPUs count on each of its
  // home nodes).
  std::vector<int> busy_cpus() const;
  // The CPU time and last CPU of each thread of its QEMU process as of
  // its last round (NodeLoad: what of a node's busy time is the domain's
  // own - vCPUs, I/O threads and all - so that a domain's own work never
  // pushes it off its home).
  const std::vector<OwnCpuUse>& process_use() const { return process_use_; }
  VmReport report() const { return report_; }
  const std::vector<std::vector<int>>& original_pinning() const { return original_; }

 private:
  AttachedDomain(LibvirtDomain domain, const Topology& topology, DomainOptions options)
      : domain_(std::move(domain)), topology_(topology), options_(options) {}

  static constexpr uint64_t kPage = 4096;

  // A guest NUMA cell (the whole domain when it has none).
  struct Cell {
    int id = 0;
    std::vector<int> vcpus;
    std::string memnode_mode, memnode_nodeset;  // its <memnode>, if any
    uint64_t first_page = 0, pages = 0;         // gfns (DomainPlacementView)
    std::vector<int> home;                      // node indices
    std::string reason;                         // of the last home decision
    std::vector<bool> allowed;                  // nodes its home may use (empty: all)
  };

  // NotFound: the domain `name` is gone, `why`.
  static absl::Status Gone(const std::string& name, absl::string_view why);
  // Attach's steps (domain_attach.cc): the guest's RAM and cells and the
  // view of them; the pinning to restore (the domain's own, or the one a
  // numavm that died recorded: `recovered`); the administrator's placement
  // as each cell's constraints.
  struct FoundPinning {
    std::vector<std::vector<int>> now;  // as found
    bool recovered = false;
  };
  absl::Status FindRam();
  absl::StatusOr<FoundPinning> ClaimOriginalPinning();
  absl::Status ConstrainToAdministrator(const FoundPinning& found);

  absl::Status Measure();
  // Where all of the RAM is, by the kernel's count (numa_maps): for the
  // report and the homes until the scan has been round once. Read at most 1% of the
  // time (it walks the page tables of the whole RAM); in between, the
  // last reading stands.
  void ReadNumaMaps();
  // Chooses each cell's home; returns the pages not on their cell's home.
  uint64_t ChooseHomes(const std::vector<int>& busy_cpus);
  absl::Status PinToHome();
  absl::Status Pin(int vcpu, const std::vector<int>& cpus);
  void Balance(RateLimiter& limiter, absl::Duration now);
  std::string HomesText() const;

  LibvirtDomain domain_;
  const Topology& topology_;
  DomainOptions options_;
  std::string name_;
  std::vector<OwnCpuUse> process_use_;
  int vcpus_ = 0;
  int host_cpus_ = 1;
  pid_t pid_ = 0;
  uint64_t ram_bytes_ = 0;
  std::vector<Cell> cells_;
  std::vector<std::vector<int>> original_;
  std::optional<PinningRecord> record_;  // with options_.runtime_dir
  bool record_saved_ = false;            // before the first PinVcpu
  // Why numavm keeps its hands off this domain's placement although
  // balancing is on (the administrator pinned its vCPUs, or bound its
  // memory with <numatune>); empty: it may act.
  std::string hands_off_;
  // The administrator's placement numavm plans within, in words (empty:
  // none, or --override-pinning).
  std::string constraints_;
  // Where <emulatorpin> keeps QEMU's emulator threads, for the status
  // (policy/admin_placement.h EmulatorPinNote); empty: not pinned.
  std::string emulator_note_;
  bool detached_ = false;
  std::unique_ptr<DomainPlacementView> view_;
  std::unique_ptr<CellSamples> samples_;
  std::unique_ptr<VmBalancer> balancer_;
  BalancerCounters counted_;  // of balancer_, already in report_
  // The scan: each gfn's node, refreshed scan_pages_per_step at a time.
  std::vector<int8_t> page_node_;  // node index, -1 not present
  uint64_t cursor_ = 0;
  uint64_t scanned_ = 0;               // gfns queried so far, up to all of them
  std::vector<HostRange> ram_ranges_;  // the cells' RAM in the QEMU process
  // The last reading, per cell: node id -> bytes.
  std::vector<std::map<int, uint64_t>> numa_maps_bytes_;
  std::optional<absl::Time> numa_maps_read_at_;
  absl::Duration numa_maps_cost_;
  VmReport report_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_ATTACHED_DOMAIN_H_
