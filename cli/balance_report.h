// How the balancer's counters are shown, in `numavm run` and `numavm replay`
// alike.
#ifndef NUMAVM_CLI_BALANCE_REPORT_H_
#define NUMAVM_CLI_BALANCE_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "balancer/vm_balancer.h"

namespace numavm {

nlohmann::json BalancerCountersToJson(const BalancerCounters& c);
// "access locality 93.0% (... recent 99.1%), 120 pages migrated (480K),
// 0 failed, 1 vCPU moves, 2 groups, balancer CPU 0.004 s"
std::string BalancerCountersText(const BalancerCounters& c);
// One line a user reads first: "access locality 50.0% -> 99.2% (90% of the
// way after 41 s), 3.1 GiB moved (812,000 pages), 2 vCPU moves", or why
// there is none.
std::string BalanceVerdict(const BalancerCounters& c, BalanceMode mode);

// `--balance advise`: each page or region decision that would move memory,
// one line on stderr with its reason.
VmBalancer::Advice AdviceOnStderr();
// `--log-decisions`: the same decisions as they are made (acted on with
// `--balance on`), each with the seconds since `start`:
// "numavm: 12.3 s decided: move gfns 0x200+512 from node index 0 to 2
// (region-follow)"; from -1: not known.
VmBalancer::Advice DecisionsOnStderr(absl::Time start);
// "memory per model node: 0:1 GiB 1:0 B" (replay and simulate).
std::string ModelMemoryText(const std::vector<uint64_t>& pages_per_node);

}  // namespace numavm

#endif  // NUMAVM_CLI_BALANCE_REPORT_H_
