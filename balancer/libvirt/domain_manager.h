// The libvirt domains one numavm process balances (`numavm attach`,
// `numavm daemon`): attach by name or all running ones, a balancing round
// over all of them with a per-host migration rate limit, detach (pinning
// restored), reports. Domains that vanish are dropped with a message;
// a lost libvirt connection is reopened on the next round.
// Thread-safe: the control socket asks for reports and detaches while the
// balancing loop runs.
#ifndef NUMAVM_BALANCER_LIBVIRT_DOMAIN_MANAGER_H_
#define NUMAVM_BALANCER_LIBVIRT_DOMAIN_MANAGER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "balancer/actuation/node_load.h"
#include "balancer/actuation/rate_limiter.h"
#include "balancer/libvirt/attached_domain.h"
#include "balancer/libvirt/libvirt_api.h"
#include "balancer/topology/topology.h"

namespace numavm {

struct ManagerOptions {
  std::string uri;  // empty: libvirt's default
  DomainOptions domain;
  uint64_t migrate_bytes_per_second = 64ull << 20;  // per host
  std::string manager_name = "numavm attach";       // shown in reports
  // Keep each domain's last report when it is detached or goes away, for
  // ReleasedReports (`numavm attach`'s final report). Off for the daemon,
  // which outlives any number of domains.
  bool keep_released_reports = false;
};

class DomainManager {
 public:
  using Log = std::function<void(const std::string&)>;

  DomainManager(Topology topology, ManagerOptions options, Log log);
  ~DomainManager();

  absl::Status Connect();
  // Attaches `names` (all must be running), or with an empty list every
  // running domain not attached yet. An unknown name fails the call and
  // attaches nothing.
  absl::Status Attach(const std::vector<std::string>& names);
  // Like Attach({}) but only names in `only` (empty: all); never fails on
  // a domain that cannot be attached - it is logged and skipped.
  void AttachNew(const std::vector<std::string>& only);

  // One balancing round over every attached domain.
  void Step(absl::Duration now);

  absl::Status Detach(const std::string& name);  // NotFound if not attached
  void DetachAll();

  std::vector<VmReport> Reports() const;
  // With keep_released_reports: the last report of every domain detached or
  // gone so far, in that order, its status saying which.
  std::vector<VmReport> ReleasedReports() const;
  std::vector<std::string> Attached() const;
  // Running domains the last AttachNew could not attach: name -> why (each
  // also logged once).
  std::map<std::string, std::string> Skipped() const;
  // Balancing rounds so far, and rounds' errors (libvirt unreachable, a
  // domain's step failing; a domain that went away is not an error).
  uint64_t rounds() const;
  uint64_t round_errors() const;
  int host_cpus() const;

  // Settings a daemon reloads on SIGHUP.
  void set_mode(BalanceMode mode);
  void set_migrate_rate(uint64_t bytes_per_second);

 private:
  const Topology topology_;
  const Log log_;
  mutable absl::Mutex mu_;
  ManagerOptions options_ ABSL_GUARDED_BY(mu_);
  std::optional<LibvirtConnection> conn_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<AttachedDomain>> domains_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> skipped_ ABSL_GUARDED_BY(mu_);  // logged once each
  std::vector<VmReport> released_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> skipped_now_ ABSL_GUARDED_BY(mu_);
  uint64_t rounds_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t round_errors_ ABSL_GUARDED_BY(mu_) = 0;
  std::unique_ptr<RateLimiter> limiter_ ABSL_GUARDED_BY(mu_);
  // Work on each node other than the attached domains' QEMU processes
  // (other processes, domains not attached): busy CPUs for every domain's
  // home.
  NodeLoad node_load_ ABSL_GUARDED_BY(mu_);

  absl::Status ConnectLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ReleaseLocked(const AttachedDomain& d, const std::string& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool IsAttachedLocked(const std::string& name) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_LIBVIRT_DOMAIN_MANAGER_H_
