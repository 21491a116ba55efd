// The probes the `evict` hinting faults took away from anonymous guest
// memory (hint_fault_sampler.h): each page's contents and the host node it
// was on, by guest page, until its first access brings it back (or Stop
// brings every one back). The guest's page itself is freed while it is
// evicted, so the store holds what the guest would hold, not a copy of it.
#ifndef NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_
#define NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_

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
  // Keeps `bytes` (a Buffer() holding the page) as guest page `gfn`'s
  // contents, from host node `node`. A page saved already is replaced.
  void Put(uint64_t gfn, std::unique_ptr<uint8_t[]> bytes, int node);
  // The saved page of `gfn`, taken out of the store; none if not evicted.
  std::optional<Page> Take(uint64_t gfn);
  // A saved page of `gfn` now belongs on host node `node` (a move the
  // balancer asked for while it was away); false if `gfn` is not saved.
  bool Retarget(uint64_t gfn, int node);
  // Gives a buffer back for reuse (no allocation per probe).
  void Recycle(std::unique_ptr<uint8_t[]> bytes);
  // Every saved page, taken out.
  std::vector<Page> TakeAll();
  uint64_t size() const;

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Page> pages_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<uint8_t[]>> spare_ ABSL_GUARDED_BY(mu_);
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_EVICTED_PAGES_H_
