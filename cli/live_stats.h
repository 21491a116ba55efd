// `--stats-interval`: one line of counters on stderr every interval while the
// VM runs (guest bytes per vCPU, samples, access locality, pages migrated).
#ifndef NUMAVM_CLI_LIVE_STATS_H_
#define NUMAVM_CLI_LIVE_STATS_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace numavm {

class LiveStats final {
 public:
  // `line` builds the text of one report; called on the printer's thread.
  LiveStats(absl::Duration interval, std::function<std::string()> line);
  ~LiveStats();

 private:
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace numavm

#endif  // NUMAVM_CLI_LIVE_STATS_H_
