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

  // Saves the page at `host` (kPageBytes) as guest page `gfn`'s contents.
  // A page saved already is overwritten.
  void Put(uint64_t gfn, const uint8_t* host, int node);
  // The saved page of `gfn`, taken out of the store; none if not evicted.
  std::optional<Page> Take(uint64_t gfn);
  // Gives a taken page's buffer back for reuse (no allocation per probe).
  void Recycle(Page page);
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
