// Samples from a guest's NUMA cells, for a VM whose accesses numavm cannot
// see (a libvirt domain, balanced from outside): each cell's memory is
// taken to be used by that cell's vCPUs - what a NUMA-aware guest kernel
// arranges, allocating a task's memory on the cell it runs on. A domain
// without cells is one cell of all its vCPUs and all its memory (ESXi's
// NUMA client). Each call gives a few pages of each of the next regions
// (2 MiB) of every cell, the cell's vCPUs in turn: the AccessBatch the
// samplers of `numavm run` give, so that the same VmBalancer decides - the
// region side moves a region whose visits agree as one batch.
// Pure and deterministic.
#ifndef NUMAVM_BALANCER_SAMPLING_CELL_SAMPLES_H_
#define NUMAVM_BALANCER_SAMPLING_CELL_SAMPLES_H_

#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "balancer/sampling/access_sample.h"

namespace numavm {

struct GuestCell {
  uint64_t first_page = 0;  // gfn of its first page (4 KiB pages)
  uint64_t pages = 0;
  std::vector<int> vcpus;  // empty: its memory has no vCPU (not sampled)
};

class CellSamples final {
 public:
  static constexpr uint64_t kRegionPages = 512;  // 2 MiB

  explicit CellSamples(std::vector<GuestCell> cells, int per_region = 4);

  // `regions` regions in all (at least one of each cell with vCPUs), shared
  // among the cells by their size, each cell's in turn from where the last
  // call stopped; the pages sampled in a region shift from sweep to sweep.
  AccessBatch Next(uint64_t regions, absl::Duration now);

  const std::vector<GuestCell>& cells() const { return cells_; }

 private:
  struct Cursor {
    uint64_t region = 0;  // the next region of the cell
    uint64_t sweep = 0;   // completed passes over the cell
    size_t vcpu = 0;      // the next of the cell's vCPUs
  };
  const std::vector<GuestCell> cells_;
  const int per_region_;
  std::vector<Cursor> cursors_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_SAMPLING_CELL_SAMPLES_H_
