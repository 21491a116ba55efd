// The client side of the control sockets, for `numavm report` and `numavm
// detach`: every reply is validated here, once, so that a peer that says
// something malformed is a note, never a crash.
#ifndef NUMAVM_BALANCER_CONTROL_CONTROL_CLIENT_H_
#define NUMAVM_BALANCER_CONTROL_CONTROL_CLIENT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "balancer/report/vm_report.h"

namespace numavm {

// What one numavm process said to "report".
struct PeerReport {
  std::string process;  // "numavm run", "numavm attach", "numavm daemon"
  int pid = 0;
  std::vector<VmReport> vms;
  std::vector<std::string> problems;  // entries of "vms" that were not VM reports
};

// Validates a "report" reply: a JSON object with "vms" (an array), and
// "process" (a string) and "pid" (a positive integer) when present.
absl::StatusOr<PeerReport> ParsePeerReport(const std::string& reply);

// Asks the process behind `socket` for its report. NotFound: nobody listens
// (a stale socket); InvalidArgument: the reply is not a numavm report.
absl::StatusOr<PeerReport> RequestReport(const std::string& socket);

// Asks the process behind `socket` to detach domain `name` ("--all": every
// domain). OK only when it answered "ok"; its "error: ..." otherwise.
absl::Status RequestDetach(const std::string& socket, const std::string& name);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_CONTROL_CONTROL_CLIENT_H_
