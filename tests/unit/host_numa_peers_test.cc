// Noticing the kernel's NUMA balancing and numad (balancer/host_numa_peers.h)
// in a proc tree laid out as the kernel lays it out.
#include "balancer/host_numa_peers.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace numavm {
namespace {

class HostNumaPeersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/numavm-proc-XXXXXX";
    proc_ = mkdtemp(pattern);
  }
  void TearDown() override { std::filesystem::remove_all(proc_); }
  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(proc_ + "/" + path).parent_path());
    std::ofstream(proc_ + "/" + path) << text;
  }
  std::string proc_;
};

TEST_F(HostNumaPeersTest, BothPeersAreNamedWithWhatToDo) {
  Write("sys/kernel/numa_balancing", "1\n");
  Write("1/comm", "systemd\n");
  Write("812/comm", "numad\n");
  Write("self/comm", "numad\n");  // not a pid
  const HostNumaPeers peers = DetectHostNumaPeers(proc_);
  EXPECT_EQ(peers.kernel_numa_balancing, 1);
  EXPECT_EQ(peers.numad_pids, std::vector<int>{812});
  const std::vector<std::string> w = HostNumaPeerWarnings(peers);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NE(w[0].find("kernel.numa_balancing = 1"), std::string::npos) << w[0];
  EXPECT_NE(w[0].find("sysctl kernel.numa_balancing=0"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("numad is running (pid 812)"), std::string::npos) << w[1];
}

TEST_F(HostNumaPeersTest, QuietWhenNeitherActs) {
  Write("sys/kernel/numa_balancing", "0\n");
  Write("1/comm", "init\n");
  EXPECT_TRUE(HostNumaPeerWarnings(DetectHostNumaPeers(proc_)).empty());
  // Memory tiering alone (2) is not NUMA balancing of the VMs' memory.
  Write("sys/kernel/numa_balancing", "2\n");
  EXPECT_TRUE(HostNumaPeerWarnings(DetectHostNumaPeers(proc_)).empty());
  // A kernel without it.
  std::filesystem::remove(proc_ + "/sys/kernel/numa_balancing");
  EXPECT_FALSE(DetectHostNumaPeers(proc_).kernel_numa_balancing.has_value());
}

}  // namespace
}  // namespace numavm
