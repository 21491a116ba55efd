// AttachedDomain's attach, in named steps: the QEMU process, the guest's
// RAM and cells, the pinning to restore, the administrator's placement.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/libvirt/attached_domain.h"
#include "balancer/libvirt/domain_cells.h"
#include "balancer/libvirt/qemu_process.h"
#include "balancer/policy/admin_placement.h"
#include "base/proc_file.h"

namespace numavm {
namespace {

// The QEMU process, found by the domain's UUID on its command line: no QMP
// passthrough, which would mark the domain tainted ("custom-monitor").
absl::StatusOr<pid_t> QemuPid(const LibvirtDomain& domain) {
  absl::StatusOr<pid_t> pid = FindQemuProcess(domain.uuid());
  if (!pid.ok()) {
    return absl::Status(pid.status().code(),
                        absl::StrCat("domain '", domain.name(), "': ", pid.status().message()));
  }
  return pid;
}

}  // namespace

absl::Status AttachedDomain::Gone(const std::string& name, absl::string_view why) {
  return absl::NotFoundError(absl::StrCat("domain '", name, "' ", why));
}

absl::Status AttachedDomain::Rebind(LibvirtDomain domain) {
  if (!domain.active()) return Gone(name_, "is not running");
  // Not finding the process here is not evidence of a restart (the next
  // rounds will tell); only another QEMU pid is.
  absl::StatusOr<pid_t> pid = QemuPid(domain);
  if (pid.ok() && *pid != pid_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "domain '", name_, "' runs in a new QEMU process (", *pid, ", was ", pid_, ")"));
  }
  domain_ = std::move(domain);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<AttachedDomain>> AttachedDomain::Attach(
    const LibvirtConnection& conn, LibvirtDomain domain, const Topology& topology,
    DomainOptions options) {
  std::unique_ptr<AttachedDomain> d(new AttachedDomain(std::move(domain), topology, options));
  d->name_ = d->domain_.name();
  if (!d->domain_.active()) return Gone(d->name_, "is not running");
  absl::StatusOr<int> vcpus = d->domain_.vcpus();
  if (!vcpus.ok()) return vcpus.status();
  d->vcpus_ = *vcpus;
  d->host_cpus_ = conn.host_cpus();
  absl::StatusOr<pid_t> pid = QemuPid(d->domain_);
  if (!pid.ok()) return pid.status();
  d->pid_ = *pid;

  if (absl::Status s = d->FindRam(); !s.ok()) return s;
  absl::StatusOr<FoundPinning> pinning = d->ClaimOriginalPinning();
  if (!pinning.ok()) return pinning.status();
  if (absl::Status s = d->ConstrainToAdministrator(*pinning); !s.ok()) return s;
  d->page_node_.assign(d->view_->pages(), -1);
  d->set_mode(options.mode);

  VmReport& r = d->report_;
  r.name = d->name_;
  r.uuid = d->domain_.uuid();
  r.kind = "libvirt";
  r.mode = std::string(BalanceModeName(options.mode));
  r.pid = d->pid_;
  r.vcpus = d->vcpus_;
  r.memory_bytes = d->ram_bytes_;
  r.status = "attached";
  // Measured before anyone can read its report: a scrape between the
  // attach and the first round shows where the memory is, not zeros.
  if (absl::Status s = d->Measure(); !s.ok()) return s;
  return d;
}

absl::Status AttachedDomain::FindRam() {
  // Guest RAM: the domain's maximum memory, or one backend per guest NUMA
  // cell (domain_cells.h).
  absl::StatusOr<uint64_t> max_memory = domain_.max_memory_bytes();
  if (!max_memory.ok()) return max_memory.status();
  absl::StatusOr<std::string> xml = domain_.XmlDesc();
  if (!xml.ok()) return xml.status();
  absl::StatusOr<std::vector<DomainCell>> parsed = ParseDomainCells(*xml, vcpus_);
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("domain '", name_, "': ", parsed.status().message()));
  }
  const std::string maps_text = ReadProcFile(absl::StrCat("/proc/", pid_, "/maps"));
  if (maps_text.empty()) return Gone(name_, "has no QEMU process any more");
  absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(maps_text);
  if (!maps.ok()) return maps.status();
  absl::StatusOr<DomainRam> ram = FindDomainRam(*maps, *std::move(parsed), vcpus_, *max_memory);
  if (!ram.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("domain '", name_, "': ", ram.status().message()));
  }
  // Cells numbered from 0, each on a 2 MiB boundary.
  std::vector<DomainPlacementView::CellRam> cell_ram;
  std::vector<GuestCell> guest_cells;
  uint64_t next = 0;
  for (size_t i = 0; i < ram->cells.size(); ++i) {
    const DomainCell& found = ram->cells[i];
    const HostRange& range = ram->ranges[i];
    Cell c;
    c.id = found.id;
    c.vcpus = found.vcpus;
    c.memnode_mode = found.memnode_mode;
    c.memnode_nodeset = found.memnode_nodeset;
    c.first_page = next;
    c.pages = range.bytes / kPage;
    next += (c.pages + CellSamples::kRegionPages - 1) / CellSamples::kRegionPages *
            CellSamples::kRegionPages;
    ram_bytes_ += range.bytes;
    cell_ram.push_back({c.first_page, range});
    ram_ranges_.push_back(range);
    guest_cells.push_back({c.first_page, c.pages, c.vcpus});
    cells_.push_back(std::move(c));
  }
  view_ = std::make_unique<DomainPlacementView>(
      topology_, pid_, std::move(cell_ram), [this] { return domain_.VcpuCpus(host_cpus_); },
      [this](int vcpu, const std::vector<int>& cpus) { return Pin(vcpu, cpus); });
  samples_ = std::make_unique<CellSamples>(std::move(guest_cells));
  return absl::OkStatus();
}

absl::StatusOr<AttachedDomain::FoundPinning> AttachedDomain::ClaimOriginalPinning() {
  absl::StatusOr<std::vector<std::vector<int>>> pinning = domain_.VcpuPinning(host_cpus_);
  if (!pinning.ok()) return pinning.status();
  FoundPinning found{*pinning, false};
  original_ = *std::move(pinning);
  if (options_.runtime_dir.empty()) return found;
  // One numavm per domain; and a pinning left by a numavm that died is
  // the original, not the pinning that numavm set.
  absl::StatusOr<PinningRecord> record =
      PinningRecord::Claim(options_.runtime_dir, domain_.uuid(), name_);
  if (!record.ok()) return record.status();
  const std::optional<SavedPinning>& left = record->recovered();
  if (left && left->qemu_pid == pid_ && left->pinning.size() == static_cast<size_t>(vcpus_)) {
    original_ = left->pinning;
    found.recovered = true;
  }
  record_.emplace(*std::move(record));
  return found;
}

absl::Status AttachedDomain::ConstrainToAdministrator(const FoundPinning& found) {
  // The administrator's placement (the pinning found, <numatune>,
  // <memnode>) constrains each cell's home (policy/admin_placement.h);
  // --override-pinning sets it aside.
  MemoryBinding domain_binding{"", "", "<numatune>"};
  if (absl::StatusOr<LibvirtDomain::NumaTune> tune = domain_.NumaTuning(); tune.ok()) {
    domain_binding.mode = tune->mode;
    domain_binding.nodeset = tune->nodeset;
  }
  // Not a constraint on the homes, and never changed: said beside them.
  if (absl::StatusOr<std::vector<int>> emulator = domain_.EmulatorPinning(host_cpus_);
      emulator.ok()) {
    emulator_note_ = EmulatorPinNote(topology_, *std::move(emulator));
  }
  std::vector<std::string> constraints;
  for (Cell& c : cells_) {
    if (options_.override_pinning) break;
    const MemoryBinding cell_binding{c.memnode_mode, c.memnode_nodeset,
                                     absl::StrCat("<memnode cellid='", c.id, "'>")};
    CellConstraints cc =
        ConstrainCell(topology_, original_, c.vcpus, {domain_binding, cell_binding});
    if (!cc.refused.empty() && hands_off_.empty()) hands_off_ = cc.refused;
    if (!cc.constrained) continue;
    c.allowed = cc.allowed;
    constraints.push_back(cells_.size() == 1 ? cc.why : absl::StrCat("cell ", c.id, ": ", cc.why));
  }
  constraints_ = absl::StrJoin(constraints, "; ");
  if (found.recovered && !hands_off_.empty()) {
    // A numavm that died had re-pinned a domain this one keeps its hands
    // off: put the administrator's pinning back now.
    for (int v = 0; v < static_cast<int>(original_.size()); ++v) {
      if (found.now[v] == original_[v]) continue;
      if (absl::Status s = domain_.PinVcpu(v, original_[v], host_cpus_); !s.ok()) return s;
    }
    record_->Forget();
  }
  return absl::OkStatus();
}

}  // namespace numavm
