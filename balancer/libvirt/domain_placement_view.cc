#include "balancer/libvirt/domain_placement_view.h"

#include "absl/strings/str_cat.h"
#include "balancer/host_placement_view.h"

namespace numavm {
namespace {
constexpr uint64_t kPage = 4096;
}  // namespace

DomainPlacementView::DomainPlacementView(const Topology& topology, pid_t pid,
                                         std::vector<CellRam> ram, VcpuCpus vcpu_cpus, Pin pin)
    : topology_(topology),
      pid_(pid),
      ram_(std::move(ram)),
      vcpu_cpus_(std::move(vcpu_cpus)),
      pin_(std::move(pin)),
      node_index_of_cpu_(topology.NodeIndexOfCpus()) {}

void DomainPlacementView::set_limiter(RateLimiter* limiter) {
  if (migrator_ && limiter == limiter_) return;
  limiter_ = limiter;
  migrator_ = std::make_unique<PageMigrator>(pid_, kPage, limiter_);
  // As in `numavm run`: a slow host's moves do not hold up the round.
  migrator_->set_max_time(PageMigrator::kMaxTimePerPeriod);
  migrator_->set_workers(PageMigrator::kDefaultWorkers);
  migrator_->set_spare_cpus([this] { return spare_cpus_.Sample(); });
}

uintptr_t DomainPlacementView::HostAddress(uint64_t gfn) const {
  for (const CellRam& c : ram_) {
    if (gfn >= c.first_page && gfn - c.first_page < c.host.bytes / kPage) {
      return c.host.start + (gfn - c.first_page) * kPage;
    }
  }
  return 0;
}

uint64_t DomainPlacementView::pages() const {
  uint64_t end = 0;
  for (const CellRam& c : ram_) end = std::max(end, c.first_page + c.host.bytes / kPage);
  return end;
}

absl::StatusOr<std::vector<int>> DomainPlacementView::PageNodes(const std::vector<uint64_t>& gfns) {
  std::vector<uintptr_t> addresses(gfns.size());
  for (size_t i = 0; i < gfns.size(); ++i) addresses[i] = HostAddress(gfns[i]);
  absl::StatusOr<std::vector<int>> ids = QueryNodesOfAddresses(pid_, addresses);
  if (!ids.ok()) return ids.status();
  for (int& id : *ids) id = id >= 0 ? topology_.IndexOf(id) : -1;
  return ids;
}

std::vector<int> DomainPlacementView::VcpuNodes() {
  absl::StatusOr<std::vector<int>> cpus = vcpu_cpus_();
  std::vector<int> nodes(cpus.ok() ? cpus->size() : homes_.size(), -1);
  for (size_t v = 0; v < nodes.size(); ++v) {
    if (v < homes_.size() && homes_[v] >= 0) {
      nodes[v] = homes_[v];
    } else if (cpus.ok()) {
      const int cpu = (*cpus)[v];
      nodes[v] = cpu >= 0 && cpu < static_cast<int>(node_index_of_cpu_.size())
                     ? node_index_of_cpu_[cpu]
                     : -1;
    }
  }
  return nodes;
}

absl::Status DomainPlacementView::PinVcpu(int vcpu, int node) {
  if (node < 0 || node >= topology_.node_count()) {
    return absl::InvalidArgumentError(absl::StrCat("no node index ", node));
  }
  return pin_(vcpu, topology_.nodes[node].cpus);
}

absl::StatusOr<MigrationOutcome> DomainPlacementView::MovePages(
    const std::vector<std::pair<uint64_t, int>>& moves, absl::Duration now) {
  if (!migrator_) set_limiter(limiter_);
  std::vector<PageMove> host_moves;
  for (const auto& [gfn, node_index] : moves) {
    const uintptr_t a = HostAddress(gfn);
    if (a == 0 || node_index < 0 || node_index >= topology_.node_count()) continue;
    host_moves.push_back(PageMove{a, topology_.nodes[node_index].id});
  }
  return migrator_->Migrate(host_moves, now);
}

}  // namespace numavm
