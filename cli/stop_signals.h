// How `numavm run` takes SIGINT and SIGTERM: blocked in every thread from
// the start, taken by a watcher thread that stops the VM while it runs, and
// still blocked afterwards, so that a signal while the report is written is
// taken (TakeStopSignal), never the default action that would end numavm
// before its report.
#ifndef NUMAVM_CLI_STOP_SIGNALS_H_
#define NUMAVM_CLI_STOP_SIGNALS_H_

#include <signal.h>

#include <atomic>
#include <thread>

#include "vmm/virtual_machine.h"

namespace numavm {

// Blocks SIGINT and SIGTERM in the calling thread (and the threads it
// starts later).
void BlockStopSignals();

// Turns SIGINT/SIGTERM into a clean stop of `vm` while it lives.
class SignalWatcher final {
 public:
  explicit SignalWatcher(VirtualMachine& vm);
  ~SignalWatcher();  // the signals stay blocked

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// True when SIGINT or SIGTERM came (and is now taken) since the watcher
// stopped looking.
bool TakeStopSignal();

}  // namespace numavm

#endif  // NUMAVM_CLI_STOP_SIGNALS_H_
