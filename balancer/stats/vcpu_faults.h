// Decayed per-vCPU fault counts by node: where each vCPU's memory has been
// lately. Halved (by default) every period, as the kernel's numa_faults are.
#ifndef NUMAVM_BALANCER_STATS_VCPU_FAULTS_H_
#define NUMAVM_BALANCER_STATS_VCPU_FAULTS_H_

#include <vector>

namespace numavm {

class VcpuFaults {
 public:
  VcpuFaults(int vcpus, int nodes) : counts_(vcpus, std::vector<double>(nodes, 0.0)) {}

  void Add(int vcpu, int node, double weight = 1.0) {
    if (vcpu >= 0 && vcpu < static_cast<int>(counts_.size()) && node >= 0 &&
        node < static_cast<int>(counts_[vcpu].size())) {
      counts_[vcpu][node] += weight;
    }
  }
  void Decay(double keep) {
    for (auto& row : counts_) {
      for (double& c : row) c *= keep;
    }
  }
  const std::vector<double>& of(int vcpu) const { return counts_[vcpu]; }
  int vcpus() const { return static_cast<int>(counts_.size()); }

 private:
  std::vector<std::vector<double>> counts_;
};

}  // namespace numavm

#endif  // NUMAVM_BALANCER_STATS_VCPU_FAULTS_H_
