// Page moves with their runs made inaccessible first (balancer/actuation/
// protected_moves.h), on real KVM while the guest runs: `verify` rewrites
// and re-checks every word of its working set while a mover takes runs of
// it away, moves their pages and gives them back, over and over. Not one
// word may change, the vCPUs that touch a run must wait and go on (KVM_RUN's
// EFAULT, retried), and move_pages must find every page under PROT_NONE.
// On one node every page "moves" to the node it is on; the lookup, the
// windows and the vCPUs' waits are the same as for a move across nodes.
#include "balancer/actuation/protected_moves.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "balancer/actuation/page_migrator.h"
#include "cli/run_options.h"
#include "cli/sampling_setup.h"
#include "tests/support/numavm_process.h"
#include "vmm/elf_payload.h"
#include "vmm/guest_abi.h"
#include "vmm/virtual_machine.h"

namespace numavm {
namespace {

struct Churned {
  RunOutcome outcome;
  std::optional<uint64_t> mismatches, generations;
  uint64_t windows = 0, retries = 0;
  // Batches, in order, and how many of their pages were found and moved.
  std::vector<uint64_t> moved_per_batch;
};

Churned RunVerifyUnderWindows(Backing backing) {
  Churned out;
  RunOptions options;
  options.vm.vcpus = 2;
  options.vm.memory_bytes = 32ull << 20;
  options.vm.backing = backing;
  options.vm.echo_console = false;
  options.vm.payload_args = "size=4M seconds=6";
  EXPECT_TRUE(NormalizeVmConfig(options.vm).ok());
  absl::StatusOr<ElfPayload> payload = ReadElfPayload(testing::PayloadPath("verify"));
  EXPECT_TRUE(payload.ok()) << payload.status();
  absl::StatusOr<std::unique_ptr<VirtualMachine>> vm =
      VirtualMachine::Create(options.vm, *payload, nullptr);
  EXPECT_TRUE(vm.ok()) << vm.status();
  if (!vm.ok()) return out;
  const std::vector<GuestRamRegion> ram = GuestRamOf(**vm);
  absl::StatusOr<std::unique_ptr<ProtectedMoves>> staging =
      ProtectedMoves::Create(ram, &(*vm)->move_fence());
  EXPECT_TRUE(staging.ok()) << staging.status();
  if (!staging.ok()) return out;
  PageMigrator migrator(0, kGuestPageBytes, nullptr);
  migrator.set_staging(staging->get());

  // The heap, where verify's working set lives, a batch of 512 pages at a
  // time round and round; each window held open a while so that vCPUs
  // run into it.
  std::atomic<bool> done{false};
  std::atomic<bool> running{true};  // the guest; batches after it are not counted
  std::thread mover([&] {
    const uint64_t first = abi::kHeapStart;
    const uint64_t span = 4ull << 20;
    uint64_t at = 0;
    while (!done.load()) {
      std::vector<PageMove> batch;
      for (uint64_t i = 0; i < PageMigrator::kBatchPages; ++i) {
        batch.push_back({reinterpret_cast<uintptr_t>(ram[0].host + first + at), 0});
        at = (at + kGuestPageBytes) % span;
      }
      absl::StatusOr<MigrationOutcome> o = migrator.Migrate(batch, absl::Now() - absl::UnixEpoch());
      ASSERT_TRUE(o.ok()) << o.status();
      if (running.load()) out.moved_per_batch.push_back(o->moved);
      absl::SleepFor(absl::Milliseconds(1));
    }
  });
  out.outcome = (*vm)->Run();
  running.store(false);
  done.store(true);
  mover.join();
  const RunRecord record = (*vm)->channel().Snapshot();
  out.mismatches = record.SumResult("mismatches");
  out.generations = record.SumResult("generations");
  out.windows = (*staging)->windows();
  out.retries = (*vm)->move_fence().retries();
  return out;
}

class ProtectedMovesTest : public ::testing::TestWithParam<Backing> {
 protected:
  void SetUp() override {
    if (!testing::KvmAvailable()) GTEST_SKIP() << "/dev/kvm is not available";
    if (absl::Status s = CheckMovesUnderProtNone(); !s.ok()) GTEST_SKIP() << s.message();
  }
};

TEST_P(ProtectedMovesTest, TheGuestWaitsOutEachWindowAndNoWordChanges) {
  const Churned c = RunVerifyUnderWindows(GetParam());
  std::printf("%lu windows, %lu vCPU waits, %lu generations\n", c.windows, c.retries,
              c.generations.value_or(0));
  ASSERT_EQ(c.outcome.end, RunEnd::kCompleted) << c.outcome.message;
  ASSERT_TRUE(c.mismatches.has_value());
  EXPECT_EQ(*c.mismatches, 0u);
  ASSERT_TRUE(c.generations.has_value());
  EXPECT_GE(*c.generations, 2u);
  EXPECT_GT(c.windows, 100u) << "the mover kept taking runs away";
  EXPECT_GT(c.retries, 0u) << "vCPUs ran into the windows and went on";
  // Once the guest has touched its whole working set (the first batches
  // find pages it has not touched yet), every page was found under
  // PROT_NONE and is on node 0: a page move_pages could not see would
  // count as not moved.
  ASSERT_GT(c.moved_per_batch.size(), 200u);
  for (size_t i = c.moved_per_batch.size() - 100; i < c.moved_per_batch.size(); ++i) {
    EXPECT_EQ(c.moved_per_batch[i], PageMigrator::kBatchPages) << "batch " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Backings, ProtectedMovesTest,
                         ::testing::Values(Backing::kMemfd, Backing::kAnon), [](const auto& info) {
                           return std::string(info.param == Backing::kMemfd ? "memfd" : "anon");
                         });

}  // namespace
}  // namespace numavm
