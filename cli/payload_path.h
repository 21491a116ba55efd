// Finds a payload by guest-tools name ("numa02") or takes a path as is.
#ifndef NUMAVM_CLI_PAYLOAD_PATH_H_
#define NUMAVM_CLI_PAYLOAD_PATH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace numavm {

// Directories searched for NAME.elf: $NUMAVM_PAYLOAD_DIR, then
// <dir of numavm>/guest-tools, then <dir of numavm>/../lib/numavm/guest-tools.
std::vector<std::string> PayloadSearchPath();

// `spec` containing '/' or ending in ".elf" is a path; otherwise a name.
absl::StatusOr<std::string> ResolvePayload(const std::string& spec);

// Names of the payloads found on the search path (for --help and errors).
std::vector<std::string> AvailablePayloads();

}  // namespace numavm

#endif  // NUMAVM_CLI_PAYLOAD_PATH_H_
