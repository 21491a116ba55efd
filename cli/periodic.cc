#include "cli/periodic.h"

#include <cstdio>

namespace numavm {

Periodic::Periodic(absl::Duration interval, std::function<void()> tick) {
  thread_ = std::thread([this, interval, tick = std::move(tick)] {
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        mu_.AwaitWithTimeout(absl::Condition(&stopping_), interval);
        if (stopping_) return;
      }
      tick();
    }
  });
}

Periodic::~Periodic() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

std::function<void()> PrintLine(std::function<std::string()> line) {
  return [line = std::move(line)] {
    const std::string text = line();
    std::fprintf(stderr, "%s\n", text.c_str());
  };
}

}  // namespace numavm
