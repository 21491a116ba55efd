#include "balancer/libvirt/domain_manager.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace numavm {

DomainManager::DomainManager(Topology topology, ManagerOptions options, Log log)
    : topology_(std::move(topology)),
      log_(std::move(log)),
      options_(std::move(options)),
      node_load_(topology_) {
  limiter_ = std::make_unique<RateLimiter>(options_.migrate_bytes_per_second,
                                           options_.migrate_bytes_per_second, absl::ZeroDuration());
}

DomainManager::~DomainManager() { DetachAll(); }

absl::Status DomainManager::ConnectLocked() {
  if (conn_ && conn_->alive()) return absl::OkStatus();
  absl::StatusOr<LibvirtConnection> c = LibvirtConnection::Open(options_.uri);
  if (!c.ok()) return c.status();
  const bool reconnect = conn_.has_value();
  // Domain handles of the old connection are dead: each domain is looked
  // up again through the new one.
  conn_.emplace(std::move(*c));
  if (reconnect) {
    log_("reconnected to libvirt");
    std::vector<std::unique_ptr<AttachedDomain>> kept;
    for (auto& d : domains_) {
      absl::StatusOr<LibvirtDomain> dom = conn_->Lookup(d->name());
      if (!dom.ok() || !dom->active()) {
        log_(absl::StrCat("domain '", d->name(), "' is gone; no longer balanced"));
        continue;
      }
      // The same QEMU process: keep what was learnt, above all the pinning
      // to restore at detach (the domain's pinning now is ours).
      absl::Status rebound = d->Rebind(*dom);
      if (rebound.ok()) {
        kept.push_back(std::move(d));
        continue;
      }
      if (absl::IsNotFound(rebound)) {
        log_(absl::StrCat(rebound.message(), "; no longer balanced"));
        continue;
      }
      log_(absl::StrCat(rebound.message(), "; attaching it afresh"));
      absl::StatusOr<std::unique_ptr<AttachedDomain>> again =
          AttachedDomain::Attach(*conn_, std::move(*dom), topology_, options_.domain);
      if (!again.ok()) {
        log_(absl::StrCat("domain '", d->name(), "': ", again.status().message()));
        continue;
      }
      kept.push_back(std::move(*again));
    }
    domains_ = std::move(kept);
  }
  return absl::OkStatus();
}

absl::Status DomainManager::Connect() {
  absl::MutexLock lock(&mu_);
  return ConnectLocked();
}

bool DomainManager::IsAttachedLocked(const std::string& name) const {
  return std::any_of(domains_.begin(), domains_.end(),
                     [&](const auto& d) { return d->name() == name; });
}

absl::Status DomainManager::Attach(const std::vector<std::string>& names) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = ConnectLocked(); !s.ok()) return s;
  std::vector<LibvirtDomain> targets;
  if (names.empty()) {
    absl::StatusOr<std::vector<LibvirtDomain>> all = conn_->ActiveDomains();
    if (!all.ok()) return all.status();
    targets = std::move(*all);
  } else {
    for (const std::string& n : names) {
      absl::StatusOr<LibvirtDomain> d = conn_->Lookup(n);
      if (!d.ok()) return d.status();
      if (!d->active())
        return absl::FailedPreconditionError(absl::StrCat("domain '", n, "' is not running"));
      targets.push_back(std::move(*d));
    }
  }
  std::vector<std::unique_ptr<AttachedDomain>> attached;
  for (LibvirtDomain& d : targets) {
    if (IsAttachedLocked(d.name())) continue;
    absl::StatusOr<std::unique_ptr<AttachedDomain>> a =
        AttachedDomain::Attach(*conn_, std::move(d), topology_, options_.domain);
    if (!a.ok()) return a.status();
    attached.push_back(std::move(*a));
  }
  for (auto& a : attached) domains_.push_back(std::move(a));
  return absl::OkStatus();
}

void DomainManager::AttachNew(const std::vector<std::string>& only) {
  absl::MutexLock lock(&mu_);
  if (absl::Status s = ConnectLocked(); !s.ok()) {
    log_(std::string(s.message()));
    return;
  }
  absl::StatusOr<std::vector<LibvirtDomain>> all = conn_->ActiveDomains();
  if (!all.ok()) {
    log_(std::string(all.status().message()));
    return;
  }
  std::map<std::string, std::string> skipped;
  for (LibvirtDomain& d : *all) {
    const std::string name = d.name();
    if (IsAttachedLocked(name)) continue;
    if (!only.empty() && std::find(only.begin(), only.end(), name) == only.end()) continue;
    absl::StatusOr<std::unique_ptr<AttachedDomain>> a =
        AttachedDomain::Attach(*conn_, std::move(d), topology_, options_.domain);
    if (!a.ok()) {
      if (std::find(skipped_.begin(), skipped_.end(), name) == skipped_.end()) {
        log_(absl::StrCat("not balancing '", name, "': ", a.status().message()));
        skipped_.push_back(name);
      }
      skipped[name] = std::string(a.status().message());
      continue;
    }
    log_(absl::StrCat("attached '", name, "' (", (*a)->vcpus(), " vCPUs, ",
                      (*a)->report().memory_bytes >> 20, " MiB)"));
    domains_.push_back(std::move(*a));
  }
  skipped_now_ = std::move(skipped);
}

void DomainManager::Step(absl::Duration now) {
  absl::MutexLock lock(&mu_);
  ++rounds_;
  if (absl::Status s = ConnectLocked(); !s.ok()) {
    log_(absl::StrCat("libvirt unavailable, retrying: ", s.message()));
    ++round_errors_;
    return;
  }
  // Work other than the attached domains' QEMU processes (as of their last
  // round), in whole CPUs, is busy for every domain; other domains' homes
  // too.
  std::vector<OwnCpuUse> own;
  for (const auto& d : domains_) {
    own.insert(own.end(), d->process_use().begin(), d->process_use().end());
  }
  const std::vector<double> other = node_load_.Sample(own);
  std::vector<bool> gone(domains_.size(), false);
  for (size_t i = 0; i < domains_.size(); ++i) {
    std::vector<int> busy(topology_.node_count(), 0);
    for (size_t n = 0; n < busy.size() && n < other.size(); ++n) {
      busy[n] = static_cast<int>(std::lround(other[n]));
    }
    for (size_t j = 0; j < domains_.size(); ++j) {
      if (j == i || gone[j]) continue;
      const std::vector<int> theirs = domains_[j]->busy_cpus();
      for (size_t n = 0; n < busy.size() && n < theirs.size(); ++n) busy[n] += theirs[n];
    }
    absl::Status s = domains_[i]->Step(busy, *limiter_, now);
    if (absl::IsNotFound(s)) {
      log_(absl::StrCat(s.message(), "; no longer balanced"));
      ReleaseLocked(*domains_[i], absl::StrCat("gone: ", s.message()));
      gone[i] = true;
    } else if (!s.ok()) {
      log_(absl::StrCat("domain '", domains_[i]->name(), "': ", s.message()));
      ++round_errors_;
    }
  }
  std::vector<std::unique_ptr<AttachedDomain>> kept;
  for (size_t i = 0; i < domains_.size(); ++i) {
    if (!gone[i]) kept.push_back(std::move(domains_[i]));
  }
  domains_ = std::move(kept);
}

absl::Status DomainManager::Detach(const std::string& name) {
  absl::MutexLock lock(&mu_);
  for (auto it = domains_.begin(); it != domains_.end(); ++it) {
    if ((*it)->name() != name) continue;
    absl::Status s = (*it)->Detach();
    ReleaseLocked(**it, s.ok() ? "detached (vCPU pinning restored)"
                               : absl::StrCat("detach failed: ", s.message()));
    domains_.erase(it);
    return s;
  }
  return absl::NotFoundError(absl::StrCat("domain '", name, "' is not attached"));
}

void DomainManager::DetachAll() {
  absl::MutexLock lock(&mu_);
  for (auto& d : domains_) {
    absl::Status s = d->Detach();
    if (!s.ok()) log_(absl::StrCat("detaching '", d->name(), "': ", s.message()));
    ReleaseLocked(*d, s.ok() ? "detached (vCPU pinning restored)"
                             : absl::StrCat("detach failed: ", s.message()));
  }
  domains_.clear();
}

void DomainManager::ReleaseLocked(const AttachedDomain& d, const std::string& status) {
  if (!options_.keep_released_reports) return;
  VmReport r = d.report();
  r.manager = options_.manager_name;
  r.status = status;
  released_.push_back(std::move(r));
}

std::vector<VmReport> DomainManager::ReleasedReports() const {
  absl::MutexLock lock(&mu_);
  return released_;
}

std::vector<VmReport> DomainManager::Reports() const {
  absl::MutexLock lock(&mu_);
  std::vector<VmReport> out;
  for (const auto& d : domains_) {
    VmReport r = d->report();
    r.manager = options_.manager_name;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> DomainManager::Attached() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& d : domains_) out.push_back(d->name());
  return out;
}

std::map<std::string, std::string> DomainManager::Skipped() const {
  absl::MutexLock lock(&mu_);
  return skipped_now_;
}

uint64_t DomainManager::rounds() const {
  absl::MutexLock lock(&mu_);
  return rounds_;
}

uint64_t DomainManager::round_errors() const {
  absl::MutexLock lock(&mu_);
  return round_errors_;
}

int DomainManager::host_cpus() const {
  absl::MutexLock lock(&mu_);
  return conn_ ? conn_->host_cpus() : 1;
}

void DomainManager::set_mode(BalanceMode mode) {
  absl::MutexLock lock(&mu_);
  options_.domain.mode = mode;
  for (auto& d : domains_) d->set_mode(mode);
}

void DomainManager::set_migrate_rate(uint64_t bytes_per_second) {
  absl::MutexLock lock(&mu_);
  options_.migrate_bytes_per_second = bytes_per_second;
  limiter_ =
      std::make_unique<RateLimiter>(bytes_per_second, bytes_per_second, absl::ZeroDuration());
}

}  // namespace numavm
