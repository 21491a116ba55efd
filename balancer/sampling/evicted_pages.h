// The probes the `evict` hinting faults took away from anonymous guest
// memory (hint_fault_sampler.h): each page's contents and the host node it
// was on, by guest page, until its first access brings it back (or Stop
// brings every one back). The guest's page itself is freed while it is
// evicted, so the store holds what the guest would hold, not a copy of it.
#ifndef NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_
#define NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace numavm {

class EvictedPages {
 public:
  static constexpr uint64_t kPageBytes = 4096;

  struct Page {
    uint64_t gfn = 0;
    int node = -1;  // host node it was on (-1: unknown)
    std::unique_ptr<uint8_t[]> bytes;
  };

  // A buffer of kPageBytes to read a page into (a spare one when there is).
  std::unique_ptr<uint8_t[]> Buffer();
  // `n` of them, for one lock.
  std::vector<std::unique_ptr<uint8_t[]>> Buffers(size_t n);
  // Keeps `bytes` (a Buffer() holding the page) as guest page `gfn`'s
  // contents, from host node `node`. A page saved already is replaced.
  void Put(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node);
  // Put of a run, for one lock: `bytes[i]` is page `first_gfn + i`, from
  // host node `nodes[i]` (as many of each).
  void PutRun(uint64_t first_gfn, std::vector<std::unique_ptr<uint8_t[]>>& bytes,
              const std::vector<int>& nodes);
  // The saved page of `gfn`, taken out of the store; none if not evicted.
  std::optional<Page> Take(uint64_t gfn);
  // A saved page of `gfn` now belongs on host node `node` (a move the
  // balancer asked for while it was away); false if `gfn` is not saved.
  // Asked for every page move while the sampler runs, so an empty store
  // answers without its lock.
  bool Retarget(uint64_t gfn, int node);
  // Gives a buffer back for reuse (no allocation per probe).
  void Recycle(std::unique_ptr<uint8_t[]> bytes);
  // Every saved page, taken out.
  std::vector<Page> TakeAll();
  uint64_t size() const;

 private:
  void PutLocked(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::atomic<uint64_t> count_{0};  // pages_.size(), readable without mu_
  absl::flat_hash_map<uint64_t, Page> pages_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<uint8_t[]>> spare_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_
