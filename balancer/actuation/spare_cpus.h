// How many of the host's CPUs sat idle lately, from /proc/stat: whether a
// migrator's extra threads (PageMigrator::set_workers) would run on CPUs
// nobody else wanted, or take them from the vCPUs. A host whose CPUs the
// vCPUs keep busy - the NUMA lab, an overcommitted host - gains nothing
// from more movers: they take the guest's time and each page costs more
// (docs/numa-lab.md, "Page moves shared by threads").
#ifndef NUMAVM_BALANCER_ACTUATION_SPARE_CPUS_H_
#define NUMAVM_BALANCER_ACTUATION_SPARE_CPUS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "balancer/actuation/proc_stat.h"

namespace numavm {

class SpareCpus {
 public:
  using Reader = std::function<std::string()>;
  // `reader` gives /proc/stat's text (default: the host's).
  explicit SpareCpus(Reader reader = nullptr);

  // CPUs idle on average since the last call (idle share x CPUs); -1 on
  // the first call, or when the file cannot be read or did not move.
  double Sample();

 private:
  Reader reader_;
  std::optional<HostCpuTimes> last_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_ACTUATION_SPARE_CPUS_H_
