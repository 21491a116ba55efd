#include "balancer/host_placement_view.h"

#include <numaif.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "balancer/actuation/binding.h"
#include "base/errno_status.h"
#include "base/proc_file.h"
#include "base/thread_cpu.h"

namespace numavm {

HostPlacementView::HostPlacementView(const Topology& topology, std::vector<GuestRamRegion> ram,
                                     VcpuThreads threads, RateLimiter* limiter)
    : topology_(topology),
      ram_(std::move(ram)),
      threads_(std::move(threads)),
      node_index_of_cpu_(topology.NodeIndexOfCpus()),
      node_load_(topology),
      migrator_(0, ram_.empty() ? kGuestPageBytes : ram_[0].page_bytes, limiter) {
  migrator_.set_max_time(PageMigrator::kMaxTimePerPeriod);
  migrator_.set_spare_cpus([this] { return spare_cpus_.Sample(); });
}

uintptr_t HostPlacementView::HostAddress(uint64_t gfn) const {
  const GuestRamRegion* r = RegionOfGfn(ram_, gfn);
  if (r == nullptr) return 0;
  uint64_t offset = (gfn - r->first_gfn()) * kGuestPageBytes;
  offset = offset / r->page_bytes * r->page_bytes;
  return reinterpret_cast<uintptr_t>(r->host) + offset;
}

absl::StatusOr<std::vector<int>> HostPlacementView::PageNodes(const std::vector<uint64_t>& gfns) {
  std::vector<int> nodes(gfns.size(), -1);
  std::vector<void*> pages;
  std::vector<size_t> index;
  for (size_t i = 0; i < gfns.size(); ++i) {
    if (uintptr_t a = HostAddress(gfns[i])) {
      pages.push_back(reinterpret_cast<void*>(a));
      index.push_back(i);
    }
  }
  std::vector<int> status(pages.size(), -1);
  if (!pages.empty() && move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) < 0) {
    return ErrnoStatus(errno, "move_pages query");
  }
  for (size_t k = 0; k < pages.size(); ++k) {
    if (status[k] >= 0) nodes[index[k]] = topology_.IndexOf(status[k]);
  }
  return nodes;
}

std::vector<int> HostPlacementView::VcpuNodes() {
  std::vector<int> nodes;
  for (pid_t tid : threads_()) {
    int cpu = tid > 0 ? LastCpuOfThread(tid) : -1;
    nodes.push_back(cpu >= 0 && cpu < static_cast<int>(node_index_of_cpu_.size())
                        ? node_index_of_cpu_[cpu]
                        : -1);
  }
  return nodes;
}

std::vector<double> HostPlacementView::OtherBusyCpus() {
  // This process is the VM: its vCPUs, and its sampling and page-moving
  // threads, whose work must not make the VM's own node look full. Read
  // every few seconds, not every scan period: it is charged to the scan.
  const absl::Duration now = absl::FromChrono(
      std::chrono::nanoseconds(std::chrono::steady_clock::now().time_since_epoch()));
  return node_load_.SampleEvery(kNodeLoadInterval, now, [] { return ProcessCpuUse(getpid()); });
}

absl::Status HostPlacementView::PinVcpu(int vcpu, int node) {
  std::vector<pid_t> tids = threads_();
  if (vcpu < 0 || vcpu >= static_cast<int>(tids.size()) || tids[vcpu] <= 0 || node < 0 ||
      node >= topology_.node_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot pin vCPU ", vcpu, " to node index ", node));
  }
  return PinThread(tids[vcpu], topology_.nodes[node].cpus);
}

absl::Status HostPlacementView::MoveUnmapped(AliasProcess* alias, UnmappedMoves::Remap remap) {
  absl::StatusOr<std::unique_ptr<UnmappedMoves>> u = UnmappedMoves::Create(ram_, alias);
  if (!u.ok()) return u.status();
  unmapped_ = *std::move(u);
  protected_.reset();
  unmapped_->set_remap(std::move(remap));
  migrator_.set_staging(unmapped_.get());
  return absl::OkStatus();
}

absl::Status HostPlacementView::MoveProtected(MoveFence* fence, const std::vector<GfnRange>& kept) {
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> p = ProtectedMoves::Create(ram_, fence);
  if (!p.ok()) return p.status();
  protected_ = *std::move(p);
  std::vector<ProtectedMoves::Range> host_kept;
  for (const GfnRange& k : kept) {
    for (uint64_t gfn = k.first; gfn < k.first + k.count; ++gfn) {
      const uintptr_t a = HostAddress(gfn);
      if (a == 0) continue;
      if (!host_kept.empty() &&
          host_kept.back().start + host_kept.back().bytes == reinterpret_cast<const uint8_t*>(a)) {
        host_kept.back().bytes += kGuestPageBytes;
      } else {
        host_kept.push_back({reinterpret_cast<const uint8_t*>(a), kGuestPageBytes});
      }
    }
  }
  protected_->set_kept(std::move(host_kept));
  unmapped_.reset();
  migrator_.set_staging(protected_.get());
  return absl::OkStatus();
}

absl::StatusOr<MigrationOutcome> HostPlacementView::MovePages(
    const std::vector<std::pair<uint64_t, int>>& moves, absl::Duration now) {
  std::vector<PageMove> host_moves;
  uint64_t held = 0;
  for (const auto& [gfn, node_index] : moves) {
    uintptr_t a = HostAddress(gfn);
    if (a == 0 || node_index < 0 || node_index >= topology_.node_count()) continue;
    const int node = topology_.nodes[node_index].id;
    if (held_ && held_(gfn, node)) {
      ++held;
      continue;
    }
    host_moves.push_back(PageMove{a, node});
  }
  absl::StatusOr<MigrationOutcome> out = migrator_.Migrate(host_moves, now);
  if (out.ok() && held > 0) {
    out->moved += held;
    out->bytes_moved += held * kGuestPageBytes;
    held_moves_ += held;
  }
  return out;
}

}  // namespace numavm
