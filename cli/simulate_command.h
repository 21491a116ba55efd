// `numavm simulate`: the balancer in a closed loop with a workload model, a
// sampler model and a topology's placement model (balancer/simulate/),
// reported against ground truth and the best placement.
#ifndef NUMAVM_CLI_SIMULATE_COMMAND_H_
#define NUMAVM_CLI_SIMULATE_COMMAND_H_

#include <cstdint>
#include <string>

#include "balancer/actuation/page_migrator.h"

namespace numavm {

struct SimulateFlags {
  std::string workload = "numa02";
  int vcpus = 4;
  std::string memory = "1G";
  std::string topology_path;
  std::string seconds = "60";
  uint64_t seed = 1;
  std::string first_touch = "boot";
  std::string confine_first = "0";
  std::string confined_work = "workload";
  std::string touch = "runs";
  std::string fault_cost = "55us";
  std::string arm_cost = "2us";
  bool arm_cost_per_node = false;
  std::string move_cost = "0";
  std::string report = "table";
  std::string sampler = "hint";
  std::string balance = "on";
  std::string migrate_rate = "256M";
  int migrate_threads = PageMigrator::kDefaultWorkers;
  std::string scan_window;  // empty: regions at a controlled rate
  std::string scan_period = "1s";
  std::string scan_period_max;  // default 16x scan_period
  std::string scan_stall_budget;
  std::string scan_rate_min;
  std::string scan_rate_max;
  int scan_probes = 0;  // 0: the default
  bool measure_cpu = false;
  std::string plot;       // --plot FILE.svg; empty: none
  std::string busy_cpus;  // --busy-cpus N[,N...]; empty: an idle host
};

int SimulateCommand(const SimulateFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_SIMULATE_COMMAND_H_
