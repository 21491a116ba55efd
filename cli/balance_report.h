// How the balancer's counters are shown, in `numavm run` and `numavm replay`
// alike.
#ifndef NUMAVM_CLI_BALANCE_REPORT_H_
#define NUMAVM_CLI_BALANCE_REPORT_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "balancer/vm_balancer.h"

namespace numavm {

nlohmann::json BalancerCountersToJson(const BalancerCounters& c);
// "access locality 93.0% (... recent 99.1%), 120 pages migrated (480K),
// 0 failed, 1 vCPU moves, 2 groups, balancer CPU 0.004 s"
std::string BalancerCountersText(const BalancerCounters& c);
// "memory per model node: 0:1 GiB 1:0 B" (replay and simulate).
std::string ModelMemoryText(const std::vector<uint64_t>& pages_per_node);

}  // namespace numavm

#endif  // NUMAVM_CLI_BALANCE_REPORT_H_
