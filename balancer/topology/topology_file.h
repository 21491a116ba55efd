// A topology described in a TOML file, for replay, tests and the lab:
//
//   [[node]]
//   id = 0
//   cpus = "0-3"
//   memory = "16G"
//   free = "12G"          # optional, default = memory
//
//   [distances]
//   matrix = [[10, 21], [21, 10]]   # rows and columns in node order
#ifndef NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_FILE_H_
#define NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "balancer/topology/topology.h"

namespace numavm {

// `source` names the text in errors (a file name).
absl::StatusOr<Topology> ParseTopologyToml(absl::string_view text, absl::string_view source);
absl::StatusOr<Topology> LoadTopologyFile(const std::string& path);

// Checks what every topology must satisfy, however it was read: ids unique,
// a square distance matrix with 10 on the diagonal and > 10 elsewhere.
absl::Status ValidateTopology(const Topology& topology);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_TOPOLOGY_TOPOLOGY_FILE_H_
