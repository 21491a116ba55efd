// `numavm replay FILE --topology TOPOLOGY`: a recorded access stream through
// the balancer against a placement model (balancer/replay/), compared with
// the oracle placement.
#ifndef NUMAVM_CLI_REPLAY_COMMAND_H_
#define NUMAVM_CLI_REPLAY_COMMAND_H_

#include <string>

namespace numavm {

struct ReplayFlags {
  std::string trace_path;
  std::string topology_path;
  std::string report = "table";
  std::string first_touch = "boot";
  std::string balance = "on";
  std::string migrate_rate = "256M";
  std::string plot;  // --plot FILE.svg; empty: none
};

int ReplayCommand(const ReplayFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_REPLAY_COMMAND_H_
