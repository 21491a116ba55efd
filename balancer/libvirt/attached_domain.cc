#include "balancer/libvirt/attached_domain.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/libvirt/domain_cells.h"
#include "balancer/libvirt/qemu_process.h"
#include "balancer/policy/home_node.h"
#include "base/proc_file.h"
#include "base/size.h"
#include "base/thread_cpu.h"

namespace numavm {
namespace {

constexpr uint64_t kPage = 4096;

absl::Status Gone(const std::string& name, absl::string_view why) {
  return absl::NotFoundError(absl::StrCat("domain '", name, "' ", why));
}

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

  // Guest RAM: the domain's maximum memory, or one backend per guest NUMA
  // cell (domain_cells.h).
  absl::StatusOr<uint64_t> max_memory = d->domain_.max_memory_bytes();
  if (!max_memory.ok()) return max_memory.status();
  absl::StatusOr<std::string> xml = d->domain_.XmlDesc();
  if (!xml.ok()) return xml.status();
  absl::StatusOr<std::vector<DomainCell>> parsed = ParseDomainCells(*xml, d->vcpus_);
  if (!parsed.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("domain '", d->name_, "': ", parsed.status().message()));
  }
  const std::string maps_text = ReadProcFile(absl::StrCat("/proc/", d->pid_, "/maps"));
  if (maps_text.empty()) return Gone(d->name_, "has no QEMU process any more");
  absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(maps_text);
  if (!maps.ok()) return maps.status();
  absl::StatusOr<DomainRam> ram = FindDomainRam(*maps, *std::move(parsed), d->vcpus_, *max_memory);
  if (!ram.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("domain '", d->name_, "': ", ram.status().message()));
  }
  const std::vector<DomainCell>& cells = ram->cells;
  const std::vector<HostRange>& ranges = ram->ranges;
  // Cells numbered from 0, each on a 2 MiB boundary.
  std::vector<DomainPlacementView::CellRam> cell_ram;
  std::vector<GuestCell> guest_cells;
  uint64_t next = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    Cell c;
    c.id = cells[i].id;
    c.vcpus = cells[i].vcpus;
    c.first_page = next;
    c.pages = ranges[i].bytes / kPage;
    next += (c.pages + CellSamples::kRegionPages - 1) / CellSamples::kRegionPages *
            CellSamples::kRegionPages;
    d->ram_bytes_ += ranges[i].bytes;
    cell_ram.push_back({c.first_page, ranges[i]});
    guest_cells.push_back({c.first_page, c.pages, c.vcpus});
    d->cells_.push_back(std::move(c));
  }
  AttachedDomain* self = d.get();
  d->view_ = std::make_unique<DomainPlacementView>(
      topology, d->pid_, std::move(cell_ram),
      [self] { return self->domain_.VcpuCpus(self->host_cpus_); },
      [self](int vcpu, const std::vector<int>& cpus) { return self->Pin(vcpu, cpus); });
  d->samples_ = std::make_unique<CellSamples>(std::move(guest_cells));
  absl::StatusOr<std::vector<std::vector<int>>> pinning = d->domain_.VcpuPinning(d->host_cpus_);
  if (!pinning.ok()) return pinning.status();
  d->original_ = *pinning;
  bool recovered = false;
  if (!options.runtime_dir.empty()) {
    // One numavm per domain; and a pinning left by a numavm that died is
    // the original, not the pinning that numavm set.
    absl::StatusOr<PinningRecord> record =
        PinningRecord::Claim(options.runtime_dir, d->domain_.uuid(), d->name_);
    if (!record.ok()) return record.status();
    const std::optional<SavedPinning>& left = record->recovered();
    if (left && left->qemu_pid == d->pid_ &&
        left->pinning.size() == static_cast<size_t>(d->vcpus_)) {
      d->original_ = left->pinning;
      recovered = true;
    }
    d->record_.emplace(std::move(*record));
  }
  // The administrator's placement (the pinning found, <numatune>,
  // <memnode>) constrains each cell's home (policy/admin_placement.h);
  // --override-pinning sets it aside.
  MemoryBinding domain_binding{"", "", "<numatune>"};
  if (absl::StatusOr<LibvirtDomain::NumaTune> tune = d->domain_.NumaTuning(); tune.ok()) {
    domain_binding.mode = tune->mode;
    domain_binding.nodeset = tune->nodeset;
  }
  std::vector<std::string> constraints;
  for (size_t i = 0; i < d->cells_.size() && !options.override_pinning; ++i) {
    Cell& c = d->cells_[i];
    const MemoryBinding cell_binding{cells[i].memnode_mode, cells[i].memnode_nodeset,
                                     absl::StrCat("<memnode cellid='", c.id, "'>")};
    CellConstraints cc =
        ConstrainCell(topology, d->original_, c.vcpus, {domain_binding, cell_binding});
    if (!cc.refused.empty() && d->hands_off_.empty()) d->hands_off_ = cc.refused;
    if (!cc.constrained) continue;
    c.allowed = cc.allowed;
    constraints.push_back(d->cells_.size() == 1 ? cc.why
                                                : absl::StrCat("cell ", c.id, ": ", cc.why));
  }
  d->constraints_ = absl::StrJoin(constraints, "; ");
  if (recovered && !d->hands_off_.empty()) {
    // A numavm that died had re-pinned a domain this one keeps its hands
    // off: put the administrator's pinning back now.
    for (int v = 0; v < static_cast<int>(d->original_.size()); ++v) {
      if ((*pinning)[v] == d->original_[v]) continue;
      if (absl::Status s = d->domain_.PinVcpu(v, d->original_[v], d->host_cpus_); !s.ok()) {
        return s;
      }
    }
    d->record_->Forget();
  }
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

absl::Status AttachedDomain::Measure() {
  if (!domain_.active()) return Gone(name_, "is no longer running");
  const uint64_t pages = page_node_.size();
  const uint64_t n = std::min<uint64_t>(pages, options_.scan_pages_per_step);
  std::vector<uint64_t> gfns;
  gfns.reserve(n);
  for (uint64_t i = 0; i < n; ++i) gfns.push_back((cursor_ + i) % pages);
  absl::StatusOr<std::vector<int>> nodes = view_->PageNodes(gfns);
  if (!nodes.ok()) {
    if (absl::IsNotFound(nodes.status())) return Gone(name_, "lost its QEMU process");
    return nodes.status();
  }
  for (uint64_t i = 0; i < n; ++i) page_node_[gfns[i]] = static_cast<int8_t>((*nodes)[i]);
  cursor_ = (cursor_ + n) % std::max<uint64_t>(pages, 1);

  report_.memory_per_node.clear();
  for (int8_t node : page_node_) {
    if (node >= 0) report_.memory_per_node[topology_.nodes[node].id] += kPage;
  }
  absl::StatusOr<std::vector<int>> cpus = domain_.VcpuCpus(host_cpus_);
  if (!cpus.ok()) return cpus.status();
  report_.vcpus_per_node.clear();
  for (int cpu : *cpus) {
    for (const NumaNode& node : topology_.nodes) {
      if (std::find(node.cpus.begin(), node.cpus.end(), cpu) != node.cpus.end()) {
        ++report_.vcpus_per_node[node.id];
      }
    }
  }
  report_.placement_locality = PlacementLocality(report_.vcpus_per_node, report_.memory_per_node);
  return absl::OkStatus();
}

void AttachedDomain::set_mode(BalanceMode mode) {
  options_.mode = mode;
  report_.mode = std::string(BalanceModeName(mode));
  // The balancer (4 bytes of state per guest page) exists only while it
  // may move memory: in `on`, for a domain numavm does not keep its hands
  // off. A new one starts its page state afresh.
  balancer_.reset();
  counted_ = {};
  if (mode != BalanceMode::kOn || !hands_off_.empty()) return;
  BalancerConfig config;
  for (const Cell& c : cells_) config.cells.push_back(c.vcpus);
  config.place_vcpus = false;            // homes are chosen across domains (Step)
  config.warmup = absl::ZeroDuration();  // the groups are the cells, known at once
  balancer_ = std::make_unique<VmBalancer>(BalanceMode::kOn, topology_, vcpus_, view_->pages(),
                                           *view_, std::move(config));
}

std::vector<int> AttachedDomain::busy_cpus() const {
  std::vector<int> busy(topology_.node_count(), 0);
  for (const Cell& c : cells_) {
    for (int n : c.home) busy[n] += static_cast<int>(c.vcpus.size());
  }
  return busy;
}

uint64_t AttachedDomain::ChooseHomes(const std::vector<int>& busy_cpus) {
  uint64_t away = 0;
  for (Cell& c : cells_) {
    if (c.vcpus.empty()) continue;  // memory without vCPUs: nowhere to go
    std::vector<double> pages(topology_.node_count(), 0.0);
    for (uint64_t g = c.first_page; g < c.first_page + c.pages; ++g) {
      if (page_node_[g] >= 0) pages[page_node_[g]] += 1;
    }
    // Other domains, and this domain's other cells, are busy CPUs.
    std::vector<int> busy = busy_cpus;
    busy.resize(topology_.node_count(), 0);
    for (const Cell& other : cells_) {
      if (&other == &c) continue;
      for (int n : other.home) busy[n] += static_cast<int>(other.vcpus.size());
    }
    HomeDecision home =
        ChooseHome(topology_, {static_cast<int>(c.vcpus.size()), pages, c.home, c.allowed}, busy);
    if (!home.nodes.empty()) c.home = home.nodes;
    c.reason = home.reason;
    std::vector<bool> at_home(topology_.node_count(), false);
    for (int n : c.home) at_home[n] = true;
    for (uint64_t g = c.first_page; g < c.first_page + c.pages; ++g) {
      away += page_node_[g] >= 0 && !at_home[page_node_[g]] ? 1 : 0;
    }
  }
  std::vector<int> nodes;
  for (const Cell& c : cells_) nodes.insert(nodes.end(), c.home.begin(), c.home.end());
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  report_.home_nodes.clear();
  for (int n : nodes) report_.home_nodes.push_back(topology_.nodes[n].id);
  return away;
}

std::string AttachedDomain::HomesText() const {
  if (cells_.size() == 1)
    return absl::StrCat("home node(s) ", absl::StrJoin(report_.home_nodes, ","));
  std::vector<std::string> parts;
  for (const Cell& c : cells_) {
    std::vector<int> ids;
    for (int n : c.home) ids.push_back(topology_.nodes[n].id);
    parts.push_back(absl::StrCat("cell ", c.id, " -> node(s) ",
                                 ids.empty() ? "none" : absl::StrJoin(ids, ",")));
  }
  return absl::StrCat("homes per cell: ", absl::StrJoin(parts, ", "));
}

absl::Status AttachedDomain::Pin(int vcpu, const std::vector<int>& cpus) {
  if (record_ && !record_saved_) {
    // On disk before numavm changes anything, so that a numavm killed now
    // still leaves the pinning to put back.
    if (absl::Status s = record_->Save(original_, pid_); !s.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("not pinning: the original pinning could not be saved: ", s.message()));
    }
    record_saved_ = true;
  }
  if (absl::Status s = domain_.PinVcpu(vcpu, cpus, host_cpus_); !s.ok()) return s;
  ++report_.vcpu_moves;
  return absl::OkStatus();
}

absl::Status AttachedDomain::PinToHome() {
  absl::StatusOr<std::vector<std::vector<int>>> now = domain_.VcpuPinning(host_cpus_);
  if (!now.ok()) return now.status();
  const std::vector<int> node_of_cpu = topology_.NodeIndexOfCpus();
  std::vector<int> homes(vcpus_, -1);  // one-node homes, for the view
  for (const Cell& c : cells_) {
    std::vector<int> home_cpus;
    for (int n : c.home) {
      home_cpus.insert(home_cpus.end(), topology_.nodes[n].cpus.begin(),
                       topology_.nodes[n].cpus.end());
    }
    if (home_cpus.empty()) continue;
    for (int v : c.vcpus) {
      if (v >= static_cast<int>(now->size())) continue;
      // Within what the administrator allows it, unless told to take over.
      const std::vector<int> cpus = PinWithin(
          topology_, c.home,
          options_.override_pinning || v >= static_cast<int>(original_.size()) ? home_cpus
                                                                               : original_[v]);
      if ((*now)[v] != cpus) {
        if (absl::Status s = Pin(v, cpus); !s.ok()) return s;
      }
      int node = -2;  // -2: none yet, -1: more than one
      for (int cpu : cpus) {
        const int n = cpu < static_cast<int>(node_of_cpu.size()) ? node_of_cpu[cpu] : -1;
        node = node == -2 || node == n ? n : -1;
      }
      homes[v] = std::max(node, -1);
    }
  }
  view_->set_vcpu_homes(std::move(homes));
  return absl::OkStatus();
}

void AttachedDomain::Balance(RateLimiter& limiter, absl::Duration now) {
  if (!balancer_) return;
  view_->set_limiter(&limiter);
  const AccessBatch batch = samples_->Next(options_.sample_regions_per_step, now);
  absl::StatusOr<PeriodOutcome> out = balancer_->OnBatch(batch, now);
  // Added as deltas: a new mode starts a new balancer (and counters).
  const BalancerCounters c = balancer_->counters();
  report_.pages_migrated += c.pages_migrated - counted_.pages_migrated;
  report_.bytes_migrated += c.bytes_migrated - counted_.bytes_migrated;
  report_.migration_failures += c.migration_failures - counted_.migration_failures;
  counted_ = c;
  if (!out.ok()) {
    // The domain runs on; its memory stays where it is this round.
    report_.status = absl::StrCat("migration failed: ", out.status().message());
    ++report_.migration_failures;
    return;
  }
}

absl::Status AttachedDomain::Step(const std::vector<int>& busy_cpus, RateLimiter& limiter,
                                  absl::Duration now) {
  const absl::Duration cpu_start = ThreadCpuTime();
  absl::Status status = Measure();
  if (status.ok()) {
    const uint64_t away = ChooseHomes(busy_cpus);
    std::string reasons;
    for (const Cell& c : cells_) {
      if (!c.reason.empty() && reasons.find(c.reason) == std::string::npos) {
        absl::StrAppend(&reasons, reasons.empty() ? "" : ", ", c.reason);
      }
    }
    if (!hands_off_.empty() && options_.mode != BalanceMode::kOff) {
      report_.status = absl::StrCat("hands off: ", hands_off_,
                                    "; numavm neither pins nor moves it (it would choose ",
                                    HomesText(), ", ", FormatSize(away * kPage), " away)");
    } else if (options_.mode == BalanceMode::kOff) {
      report_.status = absl::StrCat("measuring: it would choose ", HomesText(), ", ",
                                    FormatSize(away * kPage), " away");
    } else if (options_.mode == BalanceMode::kOn && !report_.home_nodes.empty()) {
      report_.status = absl::StrCat(
          "balancing", constraints_.empty() ? "" : " within the administrator's placement (",
          constraints_, constraints_.empty() ? "" : ")", ": ", HomesText(), " (", reasons, "), ",
          FormatSize(away * kPage), " away");
      status = PinToHome();
      if (status.ok()) Balance(limiter, now);
    } else {
      report_.status =
          absl::StrCat("advise: ", HomesText(), " (", reasons, "); would move ",
                       FormatSize(away * kPage), " there and pin ", vcpus_, " vCPUs to it");
    }
  }
  report_.balancer_cpu_seconds += absl::ToDoubleSeconds(ThreadCpuTime() - cpu_start);
  if (!status.ok()) report_.status = std::string(status.message());
  return status;
}

absl::Status AttachedDomain::Detach() {
  if (detached_) return absl::OkStatus();
  detached_ = true;
  report_.status = "detached";
  if (!domain_.active()) {  // gone: nothing to put back
    if (record_) record_->Release();
    return absl::OkStatus();
  }
  for (int v = 0; v < static_cast<int>(original_.size()); ++v) {
    if (absl::Status s = domain_.PinVcpu(v, original_[v], host_cpus_); !s.ok()) {
      if (!domain_.active()) break;
      return s;  // the record stays: 'numavm detach' can try again
    }
  }
  if (record_) record_->Release();
  return absl::OkStatus();
}

}  // namespace numavm
