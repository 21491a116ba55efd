// Telling systemd how the daemon is doing (Type=notify): READY=1 once its
// control socket and metrics serve, RELOADING=1/READY=1 around a SIGHUP,
// STOPPING=1 while it restores pinning. A datagram to $NOTIFY_SOCKET, as
// sd_notify(3) sends it; nothing when the variable is unset (not under
// systemd), and a failure is only logged: it never stops the daemon.
#ifndef NUMAVM_CLI_SYSTEMD_NOTIFY_H_
#define NUMAVM_CLI_SYSTEMD_NOTIFY_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace numavm {

// `state`: newline-separated assignments, e.g. "READY=1\nSTATUS=...".
// OK when sent or when there is no $NOTIFY_SOCKET.
absl::Status NotifySystemd(absl::string_view state);

}  // namespace numavm

#endif  // NUMAVM_CLI_SYSTEMD_NOTIFY_H_
