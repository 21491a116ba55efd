#include "balancer/libvirt/attached_domain.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "balancer/actuation/page_migrator.h"
#include "balancer/host_numa_peers.h"
#include "balancer/libvirt/kernel_numa_faults.h"
#include "balancer/libvirt/qemu_process.h"
#include "balancer/policy/home_node.h"
#include "base/proc_file.h"
#include "base/size.h"
#include "base/thread_cpu.h"

namespace numavm {

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
  scanned_ = std::min(pages, scanned_ + n);

  // While the scan knows part of the RAM (1 GiB per round), the report's
  // placement, and the homes, are of the kernel's count of all of it.
  if (scanned_ < pages) {
    ReadNumaMaps();
  } else {
    numa_maps_bytes_.clear();
  }
  report_.memory_per_node.clear();
  for (const std::map<int, uint64_t>& cell : numa_maps_bytes_) {
    for (const auto& [id, bytes] : cell) report_.memory_per_node[id] += bytes;
  }
  if (report_.memory_per_node.empty()) {
    numa_maps_bytes_.clear();  // nothing resident by its count: the scan's
    for (int8_t node : page_node_) {
      if (node >= 0) report_.memory_per_node[topology_.nodes[node].id] += kPage;
    }
  }
  absl::StatusOr<std::vector<int>> cpus = domain_.VcpuCpus(host_cpus_);
  if (!cpus.ok()) return cpus.status();
  process_use_ = ProcessCpuUse(pid_);
  report_.vcpus_per_node.clear();
  std::map<int, int> vcpu_node;  // vCPU index -> host node id
  for (size_t v = 0; v < cpus->size(); ++v) {
    for (const NumaNode& node : topology_.nodes) {
      if (std::find(node.cpus.begin(), node.cpus.end(), (*cpus)[v]) != node.cpus.end()) {
        ++report_.vcpus_per_node[node.id];
        vcpu_node[static_cast<int>(v)] = node.id;
      }
    }
  }
  report_.placement_locality = PlacementLocality(report_.vcpus_per_node, report_.memory_per_node);
  // Access locality where the host kernel's balancing counts the vCPU
  // threads' faults (kernel_numa_faults.h); counts that stand still while
  // it is off are not evidence.
  report_.access_locality.reset();
  report_.access_source.clear();
  if (std::optional<int> kernel = ReadKernelNumaBalancing(); kernel && (*kernel & 1) != 0) {
    report_.access_locality =
        KernelFaultLocality(ReadVcpuNumaFaults(pid_, QemuVcpuThreads(pid_)), vcpu_node);
    if (report_.access_locality) report_.access_source = "kernel";
  }
  return absl::OkStatus();
}

void AttachedDomain::ReadNumaMaps() {
  const absl::Time start = absl::Now();
  if (numa_maps_read_at_ && start - *numa_maps_read_at_ < 100 * numa_maps_cost_) return;
  absl::StatusOr<std::vector<NumaMapsEntry>> parsed =
      ParseNumaMaps(ReadProcFile(absl::StrCat("/proc/", pid_, "/numa_maps")));
  // Unreadable (a kernel without NUMA has no numa_maps) or malformed: the
  // scan's partial count stands.
  numa_maps_bytes_.clear();
  if (parsed.ok()) {
    for (const HostRange& r : ram_ranges_) {
      numa_maps_bytes_.push_back(ResidentBytesPerNode(*parsed, {r}));
    }
  }
  numa_maps_read_at_ = start;
  numa_maps_cost_ = absl::Now() - start;
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
    // Pages per node index: the kernel's count while the scan has not been
    // round once (Measure), else the scan's.
    std::vector<double> pages(topology_.node_count(), 0.0);
    const size_t cell = static_cast<size_t>(&c - cells_.data());
    if (cell < numa_maps_bytes_.size()) {
      for (const auto& [id, bytes] : numa_maps_bytes_[cell]) {
        if (int n = topology_.IndexOf(id); n >= 0) pages[n] += static_cast<double>(bytes / kPage);
      }
    } else {
      for (uint64_t g = c.first_page; g < c.first_page + c.pages; ++g) {
        if (page_node_[g] >= 0) pages[page_node_[g]] += 1;
      }
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
    for (size_t n = 0; n < pages.size(); ++n) {
      if (!at_home[n]) away += static_cast<uint64_t>(pages[n]);
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
  if (!emulator_note_.empty()) absl::StrAppend(&report_.status, "; ", emulator_note_);
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
