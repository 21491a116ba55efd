// numabench, the workloads of Linux guests (guest-tools/linux/numabench.c),
// run natively: each workload's threads, processes and memory as
// autonuma-benchmark's programs have them, and bad arguments refused.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "tests/support/numavm_process.h"

namespace numavm {
namespace {

using testing::ProcessResult;

const std::string kNumabench = std::string(NUMAVM_PAYLOAD_DIR) + "/linux/numabench";

struct ThreadLine {
  int process, thread;
  uint64_t passes, bytes;
};

// The per-thread lines of a run, and its process totals (process -> bytes).
std::vector<ThreadLine> ThreadsOf(const std::string& out, std::map<int, uint64_t>* totals) {
  std::vector<ThreadLine> lines;
  static const std::regex thread_re(
      R"(NUMABENCH \S+ process (\d+) thread (\d+) cpu \d+ node \d+ passes (\d+) bytes (\d+))");
  static const std::regex total_re(
      R"(NUMABENCH \S+ process (\d+) threads \d+ elapsed [0-9.]+ s bytes (\d+) MiB/s)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), thread_re);
       it != std::sregex_iterator(); ++it) {
    lines.push_back(
        {std::stoi((*it)[1]), std::stoi((*it)[2]), std::stoull((*it)[3]), std::stoull((*it)[4])});
  }
  for (auto it = std::sregex_iterator(out.begin(), out.end(), total_re);
       it != std::sregex_iterator(); ++it) {
    (*totals)[std::stoi((*it)[1])] = std::stoull((*it)[2]);
  }
  return lines;
}

ProcessResult RunBench(const std::vector<std::string>& args) {
  return testing::RunProgram(kNumabench, args);
}

// numa02: one process, each thread writes its own slice, pass after pass.
TEST(Numabench, Numa02ThreadsWriteTheirSlices) {
  ProcessResult r = RunBench({"numa02", "--size", "8M", "--seconds", "0.3", "--threads", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, uint64_t> totals;
  std::vector<ThreadLine> threads = ThreadsOf(r.out, &totals);
  ASSERT_EQ(threads.size(), 4u) << r.out;
  uint64_t sum = 0;
  for (const ThreadLine& t : threads) {
    EXPECT_EQ(t.process, 0);
    EXPECT_GE(t.passes, 1u);
    EXPECT_EQ(t.bytes, t.passes * (2u << 20)) << "a quarter of 8 MiB a pass";
    sum += t.bytes;
  }
  ASSERT_EQ(totals.size(), 1u);
  EXPECT_EQ(totals[0], sum);
}

// numa02_SMT: half the threads.
TEST(Numabench, Numa02SmtRunsHalfTheThreads) {
  ProcessResult r = RunBench({"numa02_SMT", "--size", "8M", "--seconds", "0.2", "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, uint64_t> totals;
  std::vector<ThreadLine> threads = ThreadsOf(r.out, &totals);
  ASSERT_EQ(threads.size(), 2u) << "--threads is the count itself";
  for (const ThreadLine& t : threads) EXPECT_EQ(t.bytes, t.passes * (4u << 20));
}

// numa01: two processes with half the threads each; every thread writes all
// of its process's memory.
TEST(Numabench, Numa01ThreadsShareTheirProcesssMemory) {
  ProcessResult r = RunBench({"numa01", "--size", "4M", "--seconds", "0.3", "--threads", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, uint64_t> totals;
  std::vector<ThreadLine> threads = ThreadsOf(r.out, &totals);
  ASSERT_EQ(threads.size(), 4u) << r.out;
  std::map<int, int> per_process;
  for (const ThreadLine& t : threads) {
    ++per_process[t.process];
    EXPECT_EQ(t.bytes, t.passes * (4u << 20)) << "all 4 MiB a pass";
  }
  EXPECT_EQ(per_process[0], 2);
  EXPECT_EQ(per_process[1], 2);
  EXPECT_EQ(totals.size(), 2u);
  EXPECT_NE(r.out.find("NUMABENCH numa01 done\n"), std::string::npos) << r.out;
}

// numa01_THREAD_ALLOC: each thread its own share of its process's memory.
TEST(Numabench, Numa01ThreadAllocThreadsWriteTheirOwnShare) {
  ProcessResult r =
      RunBench({"numa01_THREAD_ALLOC", "--size", "4M", "--seconds", "0.3", "--threads", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<int, uint64_t> totals;
  std::vector<ThreadLine> threads = ThreadsOf(r.out, &totals);
  ASSERT_EQ(threads.size(), 4u) << r.out;
  for (const ThreadLine& t : threads) EXPECT_EQ(t.bytes, t.passes * (2u << 20));
}

TEST(Numabench, BadArgumentsAreOneLineAndExit2) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"numa03"},
                                             {"numa02", "--size", "64X"},
                                             {"numa02", "--size", "-1M"},
                                             {"numa02", "--seconds", "0"},
                                             {"numa02", "--seconds", "nan"},
                                             {"numa02", "--threads", "0"},
                                             {"numa02", "--threads"},
                                             {"numa02", "--size", "4K", "--threads", "2"},
                                             {"numa02", "--frobnicate", "1"}}) {
    ProcessResult r = RunBench(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(testing::CountLines(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("numabench: ", 0), 0u) << r.err;
    EXPECT_EQ(r.out.find("NUMABENCH"), std::string::npos) << "nothing ran: " << r.out;
  }
}

TEST(Numabench, HelpNamesTheWorkloads) {
  ProcessResult r = RunBench({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* w : {"numa01", "numa01_THREAD_ALLOC", "numa02", "numa02_SMT"}) {
    EXPECT_NE(r.out.find(w), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace numavm
