// Chooses and builds the access sampler of a bundled-VMM VM.
#ifndef NUMAVM_CLI_SAMPLING_SETUP_H_
#define NUMAVM_CLI_SAMPLING_SETUP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/access_sampler.h"
#include "balancer/sampling/guest_ram.h"
#include "cli/run_options.h"
#include "vmm/virtual_machine.h"

namespace numavm {

// Before the VM exists: resolves the default sampler against the backing
// (minor hinting faults need memfd or hugetlb; on anonymous memory the
// default becomes write-protect hinting faults, an explicit --sampler=hint
// is an error, as is --sampler=wp on memfd or hugetlb) and asks for a dirty
// ring if needed. Returns a note when it fell back.
absl::StatusOr<std::string> PrepareSampling(RunOptions& options);

// What the scan control arms and how often, from the run's options.
ScanConfig ScanConfigOf(const RunOptions& options);

// Guest RAM of `vm` as the samplers see it.
std::vector<GuestRamRegion> GuestRamOf(const VirtualMachine& vm);

// The sampler `options` asks for (nullptr for off), wired to `vm`.
absl::StatusOr<std::unique_ptr<AccessSampler>> CreateSampler(const SamplingOptions& options,
                                                             VirtualMachine& vm);

}  // namespace numavm

#endif  // NUMAVM_CLI_SAMPLING_SETUP_H_
