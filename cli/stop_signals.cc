#include "cli/stop_signals.h"

#include <ctime>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatcher::SignalWatcher(VirtualMachine& vm) {
  BlockStopSignals();  // inherited by vCPU threads
  thread_ = std::thread([this, &vm] {
    const sigset_t set = StopSignals();
    const timespec tick{0, 100 * 1000 * 1000};
    while (!done_.load()) {
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig > 0) {
        vm.RequestStop(RunEnd::kStopped,
                       absl::StrCat("interrupted by ", sig == SIGINT ? "SIGINT" : "SIGTERM"));
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_.store(true);
  thread_.join();
}

bool TakeStopSignal() {
  const sigset_t set = StopSignals();
  const timespec now{0, 0};
  bool any = false;
  while (sigtimedwait(&set, nullptr, &now) > 0) any = true;
  return any;
}

}  // namespace numavm
