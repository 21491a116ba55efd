// `numavm daemon`'s settings: defaults, then the TOML config file
// ([daemon] and [metrics]; see configs/numavm-daemon.toml), then flags.
// Re-read on SIGHUP.
#ifndef NUMAVM_CLI_DAEMON_CONFIG_H_
#define NUMAVM_CLI_DAEMON_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "balancer/libvirt/attached_domain.h"
#include "cli/libvirt_commands.h"

namespace numavm {

struct DaemonConfig {
  std::string connect;  // empty: libvirt's default URI
  BalanceMode mode = BalanceMode::kOn;
  absl::Duration interval = absl::Seconds(5);
  uint64_t migrate_bytes_per_second = 64ull << 20;
  std::vector<std::string> domains;  // empty: every running domain
  // Also balance domains the administrator placed (attach's
  // --override-pinning); read at start, a change needs a restart.
  bool override_pinning = false;
  std::string metrics_address = "127.0.0.1";
  int metrics_port = 9464;  // 0: no metrics server
};

// Applies `text` (TOML, named `source` in errors) onto `config`.
absl::Status ApplyDaemonToml(absl::string_view text, absl::string_view source,
                             DaemonConfig& config);
// Defaults, the config file if any, then the flags.
absl::StatusOr<DaemonConfig> ResolveDaemonConfig(const DaemonFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_DAEMON_CONFIG_H_
