// The short NUMA lab run CI can afford (label lab): a 2-node kernel under
// QEMU, numa02 on 4 vCPUs with memory first touched on node 0, without and
// with numavm. Checked with move_pages inside the lab (placement locality)
// and the lab kernel's own migration counter.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "tests/lab/lab_results.h"

namespace numavm::lab {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Lab, NumavmMovesNuma02PagesToTheirVcpusNodesOnARealTwoNodeKernel) {
  if (std::system("command -v qemu-system-x86_64 >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "qemu-system-x86_64 is not installed (scripts/install-deps.sh)";
  }
  // The lab itself is not stable: now and then a nested guest shuts down or
  // the lab kernel hangs while its mappings are being invalidated (QEMU TCG
  // emulating nested SVM; docs/numa-lab.md). Such a lab failure - the lab
  // did not finish, or a guest "triple fault" - gets one more boot; the
  // first failure is printed. Anything else fails at once.
  std::string out, log;
  int rc = 0;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    char pattern[] = "/tmp/numavm-lab-XXXXXX";
    out = mkdtemp(pattern);
    const std::string cmd =
        absl::StrCat(NUMAVM_SOURCE_DIR, "/scripts/lab.sh --nodes 2 --workloads numa02 ",
                     "--modes off,numavm --seconds 25 --no-verify --out ", out, " > ", out,
                     "/stdout 2> ", out, "/stderr");
    rc = std::system(cmd.c_str());
    log = ReadFile(out + "/lab-2node.log");
    const std::string err = ReadFile(out + "/stderr");
    if (rc != 0 && log.empty() && err.find("cannot resolve") != std::string::npos) {
      GTEST_SKIP() << "no Debian kernel package reachable: " << err;
    }
    const bool lab_failed = err.find("the lab did not finish") != std::string::npos ||
                            log.find("triple fault (shutdown)") != std::string::npos;
    if (!lab_failed || attempt == 2) break;
    std::cerr << "lab attempt 1 failed in the lab itself (booting again):\n" << err << "\n";
    std::filesystem::remove_all(out);
  }
  ASSERT_EQ(rc, 0) << ReadFile(out + "/stderr");
  std::vector<LabRun> runs = ParseLabLog(log);
  ASSERT_EQ(runs.size(), 2u) << log;
  const LabRun& off = runs[0];
  const LabRun& on = runs[1];
  ASSERT_EQ(off.mode, "off");
  ASSERT_EQ(on.mode, "numavm");
  EXPECT_EQ(off.nodes, 2);
  EXPECT_EQ(off.exit_code, 0);
  EXPECT_EQ(on.exit_code, 0);
  // Without balancing, first touch preferring node 0 leaves all memory
  // there (where the unpinned vCPUs run is up to the lab's scheduler, so
  // OFF's placement locality is not a fixed number).
  const nlohmann::json& off_memory = off.report["memory_per_node"]["bytes"];
  EXPECT_GT(off_memory.value("0", uint64_t{0}), 4u << 20) << off.report["memory_per_node"];
  EXPECT_EQ(off_memory.value("1", uint64_t{0}), 0u) << off.report["memory_per_node"];
  EXPECT_EQ(off.pages_migrated, 0u);
  // numavm moved the remote half - the slices of the two vCPUs on node 1,
  // 512 pages of the 4 MiB working set, and a few of the guest's own - to
  // the nodes of their vCPUs, each once.
  ASSERT_TRUE(on.placement.has_value());
  EXPECT_GE(*on.placement, 0.95) << log;
  EXPECT_GE(on.pages_migrated, 480u);
  EXPECT_LE(on.pages_migrated, 800u) << "pages moved more than once";
  EXPECT_GT(on.report["balance"]["pages_migrated"].get<uint64_t>(), 0u);
  // And the memory is now on both nodes.
  EXPECT_GT(on.report["memory_per_node"]["bytes"].value("1", uint64_t{0}), 1u << 20);
  ASSERT_TRUE(on.access.has_value());
  EXPECT_GE(*on.access, 0.85) << "sampled access locality at the end";
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace numavm::lab
