// Process exit statuses of numavm; documented in `numavm run --help`.
#ifndef NUMAVM_CLI_EXIT_CODES_H_
#define NUMAVM_CLI_EXIT_CODES_H_

#include "vmm/run_control.h"

namespace numavm {

inline constexpr int kExitOk = 0;
inline constexpr int kExitGuestFailed = 1;  // the guest exited non-zero
inline constexpr int kExitBadInput = 2;     // flags, config, payload, host limits
inline constexpr int kExitGuestFault = 3;   // the guest broke the rules; stopped
inline constexpr int kExitTimeout = 4;      // --duration passed; stopped
inline constexpr int kExitHostError = 5;    // KVM or another host failure; a lost --record
inline constexpr int kExitInterrupted = 130;

inline int ExitCodeFor(RunEnd end) {
  switch (end) {
    case RunEnd::kCompleted:
      return kExitOk;
    case RunEnd::kGuestFailed:
      return kExitGuestFailed;
    case RunEnd::kGuestFault:
      return kExitGuestFault;
    case RunEnd::kTimeout:
      return kExitTimeout;
    case RunEnd::kStopped:
      return kExitInterrupted;
    case RunEnd::kError:
      return kExitHostError;
  }
  return kExitHostError;
}

inline constexpr const char* kExitCodeHelp =
    "Exit status: 0 completed; 1 the guest exited non-zero; 2 bad input "
    "(flags, config, payload, host limits); 3 guest fault (unknown port, "
    "access outside RAM, CPU exception, triple fault, console flood), VM "
    "stopped; 4 "
    "--duration passed, VM stopped; 5 host error (KVM, or the --record or --plot file could "
    "not be written: the report is still printed); 130 interrupted.";

// The statuses each other command can end with (`run`'s: kExitCodeHelp).
inline constexpr const char* kReplayExitHelp =
    "Exit status: 0 done; 2 bad input (flags, trace, topology; one line on stderr); 5 the "
    "--plot file could not be written (the report is still printed).";
inline constexpr const char* kAttachExitHelp =
    "Exit status: 0 stopped by SIGTERM, --duration or 'numavm detach'; 2 bad input (flags, "
    "a domain that is not running); 5 host error (libvirt unreachable); 130 interrupted "
    "(SIGINT). Every attached domain's vCPU pinning is restored in each case.";
inline constexpr const char* kDaemonExitHelp =
    "Exit status: 0 stopped by SIGTERM or --duration; 2 bad input (flags, config); 5 host "
    "error (the metrics port cannot be bound); 130 interrupted (SIGINT). Every domain's vCPU "
    "pinning is restored in each case.";
inline constexpr const char* kReportExitHelp =
    "Exit status: 0 printed (also when nothing runs, and on Ctrl-C with --watch); 2 bad input.";

}  // namespace numavm

#endif  // NUMAVM_CLI_EXIT_CODES_H_
