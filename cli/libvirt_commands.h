// `numavm attach`, `detach`, `daemon` and `report`: numavm's face for
// libvirt domains and for every numavm process on the host.
#ifndef NUMAVM_CLI_LIBVIRT_COMMANDS_H_
#define NUMAVM_CLI_LIBVIRT_COMMANDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace numavm {

struct AttachFlags {
  std::vector<std::string> domains;
  bool all = false;
  std::string connect;
  std::string balance = "on";  // off, advise or on ("enforce": on)
  std::string interval = "5s";
  std::string migrate_rate = "64M";
  std::string duration;  // empty: until Ctrl-C, SIGTERM or `numavm detach`
  std::string report = "table";
  bool override_pinning = false;  // also balance domains the administrator placed
};

struct DetachFlags {
  std::vector<std::string> domains;
  bool all = false;
  std::string connect;  // for pinning left by a numavm that died
};

struct DaemonFlags {
  std::string config_path;
  std::string connect;
  std::string balance;  // empty: the config's, else on
  std::string interval;
  std::string migrate_rate;
  std::vector<std::string> domains;
  std::string metrics_address;
  std::optional<int64_t> metrics_port;  // unset: the config's or 9464; 0: no metrics server
  std::string duration;
  bool override_pinning = false;
};

struct ReportFlags {
  std::string report = "table";  // table or json
  std::string watch;             // empty: once; else a duration (2, 5s, 500ms)
  std::string connect;
  bool no_libvirt = false;
};

int AttachCommand(const AttachFlags& flags);
int DetachCommand(const DetachFlags& flags);
int DaemonCommand(const DaemonFlags& flags);
int ReportCommand(const ReportFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_LIBVIRT_COMMANDS_H_
