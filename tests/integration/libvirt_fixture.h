// What the libvirt integration tests share: a private runtime directory per
// test, domains of the test's libvirt daemon, their pinning, numavm's report.
#ifndef NUMAVM_TESTS_INTEGRATION_LIBVIRT_FIXTURE_H_
#define NUMAVM_TESTS_INTEGRATION_LIBVIRT_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "balancer/libvirt/libvirt_api.h"
#include "tests/integration/libvirt_env.h"
#include "tests/support/numavm_process.h"

namespace numavm {
namespace testing {

inline constexpr int kMemoryMib = 128;

inline int HostCpus() { return LibvirtEnv::connection().host_cpus(); }

inline std::vector<int> AllCpus() {
  std::vector<int> all;
  for (int c = 0; c < HostCpus(); ++c) all.push_back(c);
  return all;
}

// Polls `done` for up to `seconds`.
template <typename F>
bool Eventually(F done, int seconds = 20) {
  for (int i = 0; i < seconds * 20; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done();
}

class LibvirtTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!LibvirtEnv::unavailable().empty()) GTEST_SKIP() << LibvirtEnv::unavailable();
    // A private runtime directory: control sockets of this test only.
    char pattern[] = "/tmp/numavm-run-XXXXXX";
    runtime_ = mkdtemp(pattern);
    setenv("NUMAVM_RUNTIME_DIR", runtime_.c_str(), 1);
  }
  void TearDown() override {
    if (!runtime_.empty()) std::filesystem::remove_all(runtime_);
  }

  LibvirtDomain Domain(const std::string& backing, int vcpus = 2, int cells = 0,
                       int memory_mib = kMemoryMib) {
    absl::StatusOr<LibvirtDomain> d = LibvirtEnv::CreateDomain(backing, vcpus, memory_mib, cells);
    EXPECT_TRUE(d.ok()) << d.status();
    return *d;
  }

  std::vector<std::vector<int>> Pinning(const LibvirtDomain& d) {
    absl::StatusOr<std::vector<std::vector<int>>> p = d.VcpuPinning(HostCpus());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : std::vector<std::vector<int>>{};
  }

  nlohmann::json ReportJson() {
    ProcessResult r = RunNumavm({"report", "--report", "json", "--connect", LibvirtEnv::uri()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReportSchemaProblems(r.out), "") << r.out;
    return nlohmann::json::parse(r.out, nullptr, false);
  }

  static const nlohmann::json* Find(const nlohmann::json& report, const std::string& name) {
    for (const auto& vm : report["vms"]) {
      if (vm["name"] == name) return &vm;
    }
    return nullptr;
  }

  // The status of domain `name` once numavm (`attach`) balances it; if it
  // never does, the last report and what numavm said.
  std::string BalancingStatus(const std::string& name, const BackgroundNumavm& attach) {
    nlohmann::json report;
    std::string status;
    const bool balancing = Eventually([&] {
      report = ReportJson();
      const nlohmann::json* vm = Find(report, name);
      status = vm != nullptr ? (*vm)["status"].get<std::string>() : "";
      return status.rfind("balancing", 0) == 0;
    });
    return balancing ? status : report.dump(2) + "\n" + attach.err();
  }

  std::string runtime_;
};

}  // namespace testing
}  // namespace numavm

#endif  // NUMAVM_TESTS_INTEGRATION_LIBVIRT_FIXTURE_H_
