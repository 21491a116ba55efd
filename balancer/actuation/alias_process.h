// A child process that maps the guest's memory files (memfd, hugetlbfs) in
// an address space of its own, so that pages can be migrated through its
// mappings instead of the guest's.
//
// Why a process: migrating a page unmaps it from every page table that maps
// it, and each unmap of an accessible entry is a TLB shootdown to every CPU
// the mapping's mm is active on. In the VMM's own mm that is every CPU that
// runs a vCPU thread, and KVM's MMU notifier adds a flush of every vCPU -
// per page (Linux 6.1 batches neither). The kernel's NUMA balancing avoids
// both by migrating pages its scanner made inaccessible in bulk. The child's
// mm runs nowhere (it sleeps in read()), and KVM does not know it: after the
// guest's mapping of a run is dropped with one invalidation, its pages move
// through the child with no interrupt of any vCPU per page.
//
// Start it early, while the process is small and has one thread (`numavm
// run` does so before it creates the VM): fork copies page tables and marks
// private memory copy-on-write, which costs a big process, and the child of
// a process with threads may find their locks held. The child then maps
// the files it is sent (SCM_RIGHTS), and populates or drops ranges of them
// on request; it dies with the thread that started it (PR_SET_PDEATHSIG) or
// with this object. Requests may come from any thread (one at a time).
#ifndef NUMAVM_BALANCER_ACTUATION_ALIAS_PROCESS_H_
#define NUMAVM_BALANCER_ACTUATION_ALIAS_PROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace numavm {

class AliasProcess final {
 public:
  struct Range {
    uint8_t* start = nullptr;  // page aligned, in the child's mappings (Map)
    uint64_t bytes = 0;
  };

  // Forks the child. Call from a thread that lives as long as the child
  // should (the main thread): the child dies when it ends.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<AliasProcess>> Start();
  ~AliasProcess();
  AliasProcess(const AliasProcess&) = delete;
  AliasProcess& operator=(const AliasProcess&) = delete;

  pid_t pid() const { return pid_; }
  // False once a request found the child gone (or hung: it was ended).
  bool alive() const {
    absl::MutexLock lock(&mu_);
    return socket_ >= 0;
  }

  // Maps `bytes` of file `fd` from `offset` in the child, shared, at `at`
  // if that is free there (so that addresses agree), else where the kernel
  // puts it; returns the child's address.
  absl::StatusOr<uint8_t*> Map(int fd, uint64_t offset, uint64_t bytes, const uint8_t* at);
  // Maps the ranges in the child (MADV_POPULATE_WRITE: exactly those pages;
  // the data is not written; InvalidArgument before Linux 5.14):
  // move_pages(2) of the child then finds them.
  absl::Status Populate(const std::vector<Range>& ranges);
  // Drops the child's mappings of the ranges (MADV_DONTNEED; the file keeps
  // the data).
  absl::Status Drop(const std::vector<Range>& ranges);

  // How long a request may take before the child is given up on.
  static constexpr absl::Duration kReplyTimeout = absl::Seconds(5);

 private:
  AliasProcess(pid_t pid, int socket) : pid_(pid), socket_(socket) {}
  struct Reply {
    int32_t err = 0;
    uint64_t value = 0;
  };
  absl::StatusOr<Reply> Exchange(const void* message, size_t length, int fd)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Request(uint32_t op, const std::vector<Range>& ranges);

  const pid_t pid_;
  mutable absl::Mutex mu_;
  int socket_ ABSL_GUARDED_BY(mu_);  // -1 once the child failed: every request fails
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_ALIAS_PROCESS_H_
