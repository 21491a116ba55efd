// Runs a function every interval on a thread of its own until destroyed:
// `--stats-interval` prints live counters with it, `--placement-interval`
// records where guest memory is over time.
#ifndef NUMAVM_CLI_PERIODIC_H_
#define NUMAVM_CLI_PERIODIC_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace numavm {

class Periodic final {
 public:
  Periodic(absl::Duration interval, std::function<void()> tick);
  ~Periodic();

 private:
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// `--stats-interval`: one line built by `line` on stderr every interval.
std::function<void()> PrintLine(std::function<std::string()> line);

}  // namespace numavm

#endif  // NUMAVM_CLI_PERIODIC_H_
