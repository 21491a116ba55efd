// Page moves with the guest's mappings dropped first (actuation/
// unmapped_moves.h), on real memfd memory: the data stays, one invalidation
// per contiguous run, the mapping comes back through the sampler's Remap,
// and the hinting-fault sampler's armed probes stay armed. This host has one
// node, so the moves go to the node the pages are on: what is tested is the
// path, not a change of node.
#include "balancer/actuation/unmapped_moves.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "balancer/policy/scan_control.h"
#include "balancer/sampling/hint_fault_sampler.h"

namespace numavm {
namespace {

constexpr uint64_t kPages = 64;
constexpr uint64_t kBytes = kPages * kGuestPageBytes;

// Whether the page at `p` has a page-table entry in this process.
bool Mapped(const void* p) {
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  uint64_t entry = 0;
  const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(p) / 4096 * 8);
  const bool ok = ::pread(fd, &entry, sizeof(entry), at) == sizeof(entry);
  ::close(fd);
  return ok && (entry >> 63) != 0;
}

class UnmappedMovesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<AliasProcess>> alias = AliasProcess::Start();
    ASSERT_TRUE(alias.ok()) << alias.status();
    alias_ = *std::move(alias);
    fd_ = ::memfd_create("unmapped-moves-test", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, kBytes), 0);
    void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    ASSERT_NE(m, MAP_FAILED);
    mem_ = static_cast<uint8_t*>(m);
    for (uint64_t i = 0; i < kPages; ++i) std::memset(mem_ + i * 4096, static_cast<int>(i), 4096);
    int status = -1;
    void* first = mem_;
    ASSERT_EQ(move_pages(0, 1, &first, nullptr, &status, 0), 0);
    ASSERT_GE(status, 0);
    node_ = status;
  }
  void TearDown() override {
    if (mem_ != nullptr) ::munmap(mem_, kBytes);
    if (fd_ >= 0) ::close(fd_);
  }
  std::vector<GuestRamRegion> Ram() const {
    GuestRamRegion r;
    r.gpa = 0;
    r.bytes = kBytes;
    r.host = mem_;
    r.shared_file = true;
    r.fd = fd_;
    return {r};
  }
  std::vector<PageMove> Moves(uint64_t first, uint64_t count) const {
    std::vector<PageMove> moves;
    for (uint64_t i = first; i < first + count; ++i) {
      moves.push_back({reinterpret_cast<uintptr_t>(mem_ + i * 4096), node_});
    }
    return moves;
  }
  bool DataIntact() const {
    for (uint64_t i = 0; i < kPages; ++i) {
      for (uint64_t b = 0; b < 4096; b += 512) {
        if (mem_[i * 4096 + b] != static_cast<uint8_t>(i)) return false;
      }
    }
    return true;
  }
  // A hinting-fault sampler on the memory, started; an error where
  // userfaultfd minor faults on memfd are not available.
  absl::StatusOr<std::unique_ptr<HintFaultSampler>> StartedSampler() const {
    absl::StatusOr<std::unique_ptr<HintFaultSampler>> sampler = HintFaultSampler::Create(
        Ram(), 2, [](pid_t) { return 0; }, [] { return absl::ZeroDuration(); });
    if (!sampler.ok()) return sampler.status();
    if (absl::Status s = (*sampler)->Start(); !s.ok()) {
      return absl::UnavailableError(
          absl::StrCat("userfaultfd minor faults on memfd are not available here: ", s.message()));
    }
    return sampler;
  }
  // A migrator whose batches move unmapped and are mapped back by `s`.
  struct Mover {
    std::unique_ptr<UnmappedMoves> staging;
    PageMigrator migrator{0, 4096, nullptr};
  };
  absl::StatusOr<std::unique_ptr<Mover>> MoverMappedBackBy(HintFaultSampler* s) const {
    absl::StatusOr<std::unique_ptr<UnmappedMoves>> staging =
        UnmappedMoves::Create(Ram(), alias_.get());
    if (!staging.ok()) return staging.status();
    auto mover = std::make_unique<Mover>();
    mover->staging = *std::move(staging);
    mover->staging->set_remap([s](uint8_t* host, uint64_t bytes) { s->Remap(host, bytes); });
    mover->migrator.set_staging(mover->staging.get());
    return mover;
  }
  std::unique_ptr<AliasProcess> alias_;
  int fd_ = -1;
  uint8_t* mem_ = nullptr;
  int node_ = 0;
};

TEST_F(UnmappedMovesTest, MovesEachRunAfterOneUnmapAndKeepsTheData) {
  absl::StatusOr<std::unique_ptr<UnmappedMoves>> staging =
      UnmappedMoves::Create(Ram(), alias_.get());
  ASSERT_TRUE(staging.ok()) << staging.status();
  std::vector<std::pair<uint8_t*, uint64_t>> remapped;
  (*staging)->set_remap([&](uint8_t* host, uint64_t bytes) { remapped.emplace_back(host, bytes); });
  PageMigrator migrator(0, 4096, nullptr);
  migrator.set_staging(staging->get());
  // Two runs: pages 0-31 and 40-47.
  std::vector<PageMove> moves = Moves(0, 32);
  for (const PageMove& m : Moves(40, 8)) moves.push_back(m);
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(moves, absl::ZeroDuration());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 40u);
  EXPECT_EQ(out->moved_unmapped, 40u);
  EXPECT_EQ((*staging)->runs(), 2u);
  ASSERT_EQ(remapped.size(), 2u);
  EXPECT_EQ(remapped[0], std::make_pair(mem_, uint64_t{32 * 4096}));
  EXPECT_EQ(remapped[1], std::make_pair(mem_ + 40 * 4096, uint64_t{8 * 4096}));
  // The moved runs' mappings are gone (this remap hook maps nothing back),
  // the rest untouched; every byte reads back as written.
  EXPECT_FALSE(Mapped(mem_));
  EXPECT_FALSE(Mapped(mem_ + 47 * 4096));
  EXPECT_TRUE(Mapped(mem_ + 32 * 4096));
  EXPECT_TRUE(DataIntact());
}

// The alias process gone (killed, or ended after a request it did not
// answer): batches move where they are mapped, and the guest's mappings
// are not dropped for nothing.
TEST_F(UnmappedMovesTest, WithoutItsAliasProcessABatchMovesMappedAndKeepsItsMappings) {
  absl::StatusOr<std::unique_ptr<UnmappedMoves>> staging =
      UnmappedMoves::Create(Ram(), alias_.get());
  ASSERT_TRUE(staging.ok()) << staging.status();
  PageMigrator migrator(0, 4096, nullptr);
  migrator.set_staging(staging->get());
  ASSERT_EQ(::kill(alias_->pid(), SIGKILL), 0);
  // The first batch finds it gone once the guest's run is dropped: nothing
  // moves unmapped, no data is lost (with no sampler to map the run back,
  // its pages are found unmapped and move the next time they are asked).
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(Moves(0, 8), absl::ZeroDuration());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved_unmapped, 0u);
  EXPECT_FALSE((*staging)->alias_alive());
  EXPECT_TRUE(DataIntact());
  // From then on the guest's mapping stays as it is.
  out = migrator.Migrate(Moves(16, 8), absl::Seconds(1));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved, 8u);
  EXPECT_EQ(out->moved_unmapped, 0u);
  for (uint64_t i = 16; i < 24; ++i) EXPECT_TRUE(Mapped(mem_ + i * 4096)) << "page " << i;
  EXPECT_TRUE(DataIntact());
}

TEST_F(UnmappedMovesTest, AnonymousMemoryIsNotStaged) {
  std::vector<GuestRamRegion> ram = Ram();
  ram[0].shared_file = false;
  ram[0].fd = -1;
  EXPECT_FALSE(UnmappedMoves::Create(ram, alias_.get()).ok());
}

TEST_F(UnmappedMovesTest, APageOutsideTheRegionsMovesTheBatchAsItIs) {
  absl::StatusOr<std::unique_ptr<UnmappedMoves>> staging =
      UnmappedMoves::Create(Ram(), alias_.get());
  ASSERT_TRUE(staging.ok()) << staging.status();
  PageMigrator migrator(0, 4096, nullptr);
  migrator.set_staging(staging->get());
  std::vector<PageMove> moves = Moves(0, 4);
  static uint8_t outside[4096] __attribute__((aligned(4096)));
  outside[0] = 1;
  moves.push_back({reinterpret_cast<uintptr_t>(outside), node_});
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(moves, absl::ZeroDuration());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved_unmapped, 0u);
  EXPECT_EQ((*staging)->runs(), 0u);
  EXPECT_TRUE(Mapped(mem_));
  EXPECT_TRUE(DataIntact());
}

// The hinting-fault sampler maps a moved run back except its armed probes,
// which still fault and are reported.
TEST_F(UnmappedMovesTest, TheHintSamplerMapsARunBackAndKeepsItsProbesArmed) {
  absl::StatusOr<std::unique_ptr<HintFaultSampler>> sampler = StartedSampler();
  if (!sampler.ok()) GTEST_SKIP() << sampler.status();
  ScanPlan plan;
  plan.regions.push_back({0, kPages});
  plan.probes.push_back({5, 1});
  ASSERT_TRUE((*sampler)->Arm(plan).ok());
  ASSERT_FALSE(Mapped(mem_ + 5 * 4096));
  HintFaultSampler* s = sampler->get();
  absl::StatusOr<std::unique_ptr<Mover>> mover = MoverMappedBackBy(s);
  ASSERT_TRUE(mover.ok()) << mover.status();
  PageMigrator& migrator = (*mover)->migrator;
  absl::StatusOr<MigrationOutcome> out = migrator.Migrate(Moves(0, 16), absl::ZeroDuration());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->moved_unmapped, 16u);
  for (uint64_t i = 0; i < 16; ++i) {
    EXPECT_EQ(Mapped(mem_ + i * 4096), i != 5) << "page " << i;
  }
  // Mapped back without a fault: nothing reported yet. The probe faults on
  // its first touch and is reported; every byte is as written.
  AccessBatch batch;
  ASSERT_TRUE((*sampler)->Collect(batch).ok());
  EXPECT_TRUE(batch.empty());
  EXPECT_TRUE(DataIntact());
  // The handler records the fault after it woke the toucher: wait for it.
  for (int i = 0; i < 500 && batch.empty(); ++i) {
    ASSERT_TRUE((*sampler)->Collect(batch).ok());
    if (batch.empty()) ::usleep(10000);
  }
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].gfn, 5u);
  (*sampler)->Stop();
}

// Writers keep writing while runs are unmapped, moved and mapped back and
// probes armed: no write is lost, every value reads back as written.
TEST_F(UnmappedMovesTest, WritesWhileRunsMoveAreNeverLost) {
  absl::StatusOr<std::unique_ptr<HintFaultSampler>> sampler = StartedSampler();
  if (!sampler.ok()) GTEST_SKIP() << sampler.status();
  HintFaultSampler* s = sampler->get();
  absl::StatusOr<std::unique_ptr<Mover>> mover = MoverMappedBackBy(s);
  ASSERT_TRUE(mover.ok()) << mover.status();
  PageMigrator& migrator = (*mover)->migrator;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> mismatches{0}, writes{0};
  // Each writer owns half of the pages: a word per 512 bytes, counting up.
  auto writer = [&](uint64_t first) {
    uint64_t value = 0;
    while (!stop.load()) {
      ++value;
      for (uint64_t i = first; i < first + kPages / 2; ++i) {
        for (uint64_t b = 0; b < 4096; b += 512) {
          volatile uint64_t* word = reinterpret_cast<uint64_t*>(mem_ + i * 4096 + b);
          *word = value;
          if (*word != value) ++mismatches;
        }
      }
      writes += 1;
    }
    // The last round, read back after every move is done.
    for (uint64_t i = first; i < first + kPages / 2; ++i) {
      for (uint64_t b = 0; b < 4096; b += 512) {
        if (*reinterpret_cast<volatile uint64_t*>(mem_ + i * 4096 + b) != value) ++mismatches;
      }
    }
  };
  std::thread a(writer, 0), b(writer, kPages / 2);
  uint64_t moved_unmapped = 0;
  for (int round = 0; round < 200; ++round) {
    ScanPlan plan;
    plan.regions.push_back({0, kPages});
    plan.probes.push_back({static_cast<uint64_t>(round % kPages), 1});
    plan.probes.push_back({static_cast<uint64_t>((round * 7 + 3) % kPages), 1});
    ASSERT_TRUE(s->Arm(plan).ok());
    absl::StatusOr<MigrationOutcome> out =
        migrator.Migrate(Moves(0, kPages), absl::Milliseconds(round));
    ASSERT_TRUE(out.ok()) << out.status();
    moved_unmapped += out->moved_unmapped;
    AccessBatch batch;
    ASSERT_TRUE(s->Collect(batch).ok());
  }
  stop.store(true);
  a.join();
  b.join();
  s->Stop();
  EXPECT_EQ(mismatches.load(), 0u);
  EXPECT_GT(writes.load(), 0u);
  // Pages busy under a writer may be refused (EBUSY); most move.
  EXPECT_GT(moved_unmapped, 200u * kPages / 2);
}

// The same memory and sampler, without a move: a run of neighbouring probe
// pages (scan_control.h, where an arming call is dear) is armed whole, past
// a page that is not resident, and each armed page reports its own touch.
TEST_F(UnmappedMovesTest, TheHintSamplerArmsARunOfProbesPastPagesNotResident) {
  absl::StatusOr<std::unique_ptr<HintFaultSampler>> sampler = StartedSampler();
  if (!sampler.ok()) GTEST_SKIP() << sampler.status();
  // Page 12 leaves the page cache: its next touch is a missing fault.
  ASSERT_EQ(::fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 12 * 4096, 4096), 0);
  ScanPlan plan;
  plan.regions.push_back({0, kPages});
  plan.probes.push_back({10, 4});
  plan.probes.push_back({40, 1});
  ASSERT_TRUE((*sampler)->Arm(plan).ok());
  for (uint64_t i = 8; i < 16; ++i) {
    EXPECT_EQ(Mapped(mem_ + i * 4096), i < 10 || i > 13) << "page " << i;
  }
  EXPECT_FALSE(Mapped(mem_ + 40 * 4096));
  EXPECT_EQ((*sampler)->stats().pages_armed, 4u);
  // Armed again at once: nothing new (still armed, or not resident).
  ASSERT_TRUE((*sampler)->Arm(plan).ok());
  EXPECT_EQ((*sampler)->stats().pages_armed, 4u);
  for (uint64_t i = 8; i < 16; ++i) mem_[i * 4096 + 1] = 1;
  mem_[40 * 4096 + 1] = 1;
  AccessBatch batch;
  for (int i = 0; i < 500 && batch.size() < 4; ++i) {
    ASSERT_TRUE((*sampler)->Collect(batch).ok());
    if (batch.size() < 4) ::usleep(10000);
  }
  std::vector<uint64_t> gfns;
  for (const AccessSample& s : batch) gfns.push_back(s.gfn);
  std::sort(gfns.begin(), gfns.end());
  EXPECT_EQ(gfns, (std::vector<uint64_t>{10, 11, 13, 40}));
  (*sampler)->Stop();
}

}  // namespace
}  // namespace numavm
