// Where a page lives when move_pages(2) cannot say: its page frame from
// /proc/PID/pagemap, the frame's node from the zones in /proc/zoneinfo.
//
// Kernels from 6.2 to 6.5 (and stable kernels with the same backport, such
// as Debian 12's 6.1) answer a move_pages query with -ENOENT for a page the
// kernel's own NUMA balancing has just marked (a PROT_NONE hinting entry):
// a placement measured that way sees only the pages touched since the
// last scan - the ones already placed right - and reads far too good.
// Pagemap still reports those pages present with their frame. Frames are
// shown only to CAP_SYS_ADMIN; without it every lookup stays unknown.
#ifndef NUMAVM_BALANCER_ACTUATION_PFN_NODES_H_
#define NUMAVM_BALANCER_ACTUATION_PFN_NODES_H_

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace numavm {

class PfnNodeMap {
 public:
  // Parses /proc/zoneinfo's text ("Node N, zone NAME", "spanned",
  // "start_pfn:"); zones with no pages are left out.
  static absl::StatusOr<PfnNodeMap> Parse(absl::string_view zoneinfo);
  static absl::StatusOr<PfnNodeMap> FromSystem();  // /proc/zoneinfo

  // The node of frame `pfn`, or -1 if no zone spans it.
  int NodeOf(uint64_t pfn) const;
  size_t zones() const { return zones_.size(); }

 private:
  struct Zone {
    uint64_t start, end;  // [start, end) in frames
    int node;
  };
  std::vector<Zone> zones_;  // sorted by start
};

// For every entry of `status` that is -ENOENT (a move_pages answer), looks
// the page up in pagemap of process `pid` (0: this one) and, if it is
// present with a frame, replaces the entry with the frame's node. Returns
// how many entries it resolved. A pagemap that cannot be read resolves none.
absl::StatusOr<uint64_t> ResolveUnseenPages(pid_t pid, const std::vector<void*>& pages,
                                            const PfnNodeMap& map, std::vector<int>& status);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_PFN_NODES_H_
