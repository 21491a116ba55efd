#include "balancer/libvirt/attached_domain.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/libvirt/qemu_process.h"
#include "balancer/policy/home_node.h"
#include "balancer/sampling/proc_file.h"
#include "balancer/sampling/thread_cpu.h"
#include "base/size.h"

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
  // A QMP failure here is not evidence of a restart: the next rounds will
  // tell. Only another QEMU pid is.
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

  // Guest RAM is the domain's maximum memory (its backend's size; a balloon
  // makes the current memory smaller, never the mapping).
  absl::StatusOr<uint64_t> max_memory = d->domain_.max_memory_bytes();
  if (!max_memory.ok()) return max_memory.status();
  const uint64_t ram_bytes = *max_memory;
  const std::string maps_text = ReadProcFile(absl::StrCat("/proc/", d->pid_, "/maps"));
  if (maps_text.empty()) return Gone(d->name_, "has no QEMU process any more");
  absl::StatusOr<std::vector<MapsEntry>> maps = ParseMaps(maps_text);
  if (!maps.ok()) return maps.status();
  absl::StatusOr<HostRange> ram = FindGuestRam(*maps, ram_bytes);
  if (!ram.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("domain '", d->name_, "': ", ram.status().message()));
  }
  d->ram_ = *ram;
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
  // The administrator's placement is kept: vCPUs pinned to fewer than all
  // CPUs (<vcpupin>, <vcpu cpuset=>, placement='auto') or memory bound by
  // <numatune>.
  // Unpinned means allowed on every online CPU (the host map may also list
  // offline ones).
  std::vector<int> online;
  for (const NumaNode& n : topology.nodes)
    online.insert(online.end(), n.cpus.begin(), n.cpus.end());
  std::sort(online.begin(), online.end());
  for (int v = 0; v < static_cast<int>(d->original_.size()) && d->hands_off_.empty(); ++v) {
    std::vector<int> allowed = d->original_[v];
    std::sort(allowed.begin(), allowed.end());
    if (!std::includes(allowed.begin(), allowed.end(), online.begin(), online.end())) {
      d->hands_off_ =
          absl::StrCat("vCPU ", v, " is pinned to CPUs ", absl::StrJoin(d->original_[v], ","),
                       " by the domain's configuration");
    }
  }
  if (absl::StatusOr<LibvirtDomain::NumaTune> tune = d->domain_.NumaTuning();
      d->hands_off_.empty() && tune.ok() && !tune->nodeset.empty()) {
    d->hands_off_ = absl::StrCat("its memory is bound by <numatune mode='", tune->mode,
                                 "' nodeset='", tune->nodeset, "'>");
  }
  if (!d->hands_off_.empty() && options.override_pinning) d->hands_off_.clear();
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
  d->page_node_.assign(d->ram_.bytes / kPage, -1);

  VmReport& r = d->report_;
  r.name = d->name_;
  r.uuid = d->domain_.uuid();
  r.kind = "libvirt";
  r.mode = std::string(BalanceModeName(options.mode));
  r.pid = d->pid_;
  r.vcpus = d->vcpus_;
  r.memory_bytes = d->ram_.bytes;
  r.status = "attached";
  return d;
}

absl::Status AttachedDomain::Measure() {
  if (!domain_.active()) return Gone(name_, "is no longer running");
  const uint64_t pages = page_node_.size();
  const uint64_t n = std::min<uint64_t>(pages, options_.scan_pages_per_step);
  std::vector<void*> addresses;
  addresses.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    addresses.push_back(reinterpret_cast<void*>(ram_.start + ((cursor_ + i) % pages) * kPage));
  }
  absl::StatusOr<std::vector<int>> nodes = QueryNodesOf(pid_, addresses);
  if (!nodes.ok()) {
    if (absl::IsNotFound(nodes.status())) return Gone(name_, "lost its QEMU process");
    return nodes.status();
  }
  for (uint64_t i = 0; i < n; ++i) {
    const int id = (*nodes)[i];
    page_node_[(cursor_ + i) % pages] = static_cast<int8_t>(id >= 0 ? topology_.IndexOf(id) : -1);
  }
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

absl::Status AttachedDomain::PinToHome() {
  std::vector<int> cpus;
  for (int n : home_)
    cpus.insert(cpus.end(), topology_.nodes[n].cpus.begin(), topology_.nodes[n].cpus.end());
  std::sort(cpus.begin(), cpus.end());
  if (cpus.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<std::vector<int>>> now = domain_.VcpuPinning(host_cpus_);
  if (!now.ok()) return now.status();
  for (int v = 0; v < static_cast<int>(now->size()); ++v) {
    if ((*now)[v] == cpus) continue;
    if (record_ && !record_saved_) {
      // On disk before numavm changes anything, so that a numavm killed
      // now still leaves the pinning to put back.
      if (absl::Status s = record_->Save(original_, pid_); !s.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("not pinning: the original pinning could not be saved: ", s.message()));
      }
      record_saved_ = true;
    }
    if (absl::Status s = domain_.PinVcpu(v, cpus, host_cpus_); !s.ok()) return s;
    ++report_.vcpu_moves;
  }
  return absl::OkStatus();
}

void AttachedDomain::MigrateTowardsHome(RateLimiter& limiter, absl::Duration now) {
  std::vector<bool> at_home(topology_.node_count(), false);
  for (int n : home_) at_home[n] = true;
  const uint64_t budget = limiter.Available(now) / kPage;
  std::vector<PageMove> moves;
  std::vector<uint64_t> indices;
  size_t next_home = 0;
  for (uint64_t i = 0; i < page_node_.size() && moves.size() < budget; ++i) {
    const int8_t node = page_node_[i];
    if (node < 0 || at_home[node]) continue;
    const int to = home_[next_home++ % home_.size()];
    moves.push_back({ram_.start + i * kPage, topology_.nodes[to].id});
    indices.push_back(i);
  }
  if (moves.empty()) return;
  PageMigrator migrator(pid_, kPage, &limiter);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(moves, now);
  if (!out.ok()) {
    report_.status = absl::StrCat("migration failed: ", out.status().message());
    ++report_.migration_failures;
    return;
  }
  report_.pages_migrated += out->moved;
  report_.bytes_migrated += out->bytes_moved;
  report_.migration_failures += out->failed + out->no_memory;
  // Placement is re-queried by the scan; until then, assume what moved moved.
  for (size_t k = 0; k < indices.size() && k < out->moved; ++k) {
    page_node_[indices[k]] = static_cast<int8_t>(topology_.IndexOf(moves[k].to_node));
  }
}

absl::Status AttachedDomain::Step(const std::vector<int>& busy_cpus, RateLimiter& limiter,
                                  absl::Duration now) {
  const absl::Duration cpu_start = ThreadCpuTime();
  absl::Status status = Measure();
  if (status.ok()) {
    std::vector<double> pages(topology_.node_count(), 0.0);
    for (int8_t node : page_node_) {
      if (node >= 0) pages[node] += 1;
    }
    HomeDecision home = ChooseHome(topology_, {vcpus_, pages, home_}, busy_cpus);
    if (!home.nodes.empty()) home_ = home.nodes;
    report_.home_nodes.clear();
    for (int n : home_) report_.home_nodes.push_back(topology_.nodes[n].id);
    uint64_t away = 0;
    std::vector<bool> at_home(topology_.node_count(), false);
    for (int n : home_) at_home[n] = true;
    for (int8_t node : page_node_) away += node >= 0 && !at_home[node] ? 1 : 0;
    if (!hands_off_.empty() && options_.mode != BalanceMode::kOff) {
      report_.status = absl::StrCat(
          "hands off: ", hands_off_, "; numavm neither pins nor moves it (home node(s) would be ",
          absl::StrJoin(report_.home_nodes, ","), ", ", FormatSize(away * kPage), " away)");
    } else if (options_.mode == BalanceMode::kOff) {
      report_.status =
          absl::StrCat("measuring: home node(s) would be ", absl::StrJoin(report_.home_nodes, ","),
                       ", ", FormatSize(away * kPage), " away");
    } else if (options_.mode == BalanceMode::kOn && !home_.empty()) {
      status = PinToHome();
      if (status.ok()) MigrateTowardsHome(limiter, now);
      report_.status =
          absl::StrCat("balancing: home node(s) ", absl::StrJoin(report_.home_nodes, ","), " (",
                       home.reason, "), ", FormatSize(away * kPage), " away");
    } else {
      report_.status = absl::StrCat("advise: home node(s) ", absl::StrJoin(report_.home_nodes, ","),
                                    " (", home.reason, "); would move ", FormatSize(away * kPage),
                                    " there and pin ", vcpus_, " vCPUs to it");
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
