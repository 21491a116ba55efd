#include "cli/live_stats.h"

#include <cstdio>

namespace numavm {

LiveStats::LiveStats(absl::Duration interval, std::function<std::string()> line) {
  thread_ = std::thread([this, interval, line = std::move(line)] {
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval);
        if (stopping_) return;
      }
      std::string text = line();
      std::fprintf(stderr, "%s\n", text.c_str());
    }
  });
}

LiveStats::~LiveStats() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

}  // namespace numavm
