// The alias process (actuation/alias_process.h) on real memfd memory: it
// maps the files it is sent, at this process's address when it is free
// there; it maps and drops the ranges it is asked to in its own page tables,
// where move_pages(2) of its pid finds them; it keeps none of this process's
// fds; it ends with its owner; a child that is gone fails requests cleanly.
#include "balancer/actuation/alias_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <numaif.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace numavm {
namespace {

constexpr uint64_t kBytes = 16 * 4096;

// Where page `p` of process `pid` is (move_pages' query): a node, or
// -ENOENT where that process has no page-table entry for it.
int NodeIn(pid_t pid, void* p) {
  int status = -1;
  if (move_pages(pid, 1, &p, nullptr, &status, 0) != 0) return -errno - 1000;
  return status;
}

int OpenFds(pid_t pid) {
  DIR* d = ::opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n;
}

class AliasProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Started first, as `numavm run` does: the guest memory comes later.
    absl::StatusOr<std::unique_ptr<AliasProcess>> alias = AliasProcess::Start();
    ASSERT_TRUE(alias.ok()) << alias.status();
    alias_ = *std::move(alias);
    fd_ = ::memfd_create("alias-process-test", MFD_CLOEXEC);
    ASSERT_GE(fd_, 0);
    ASSERT_EQ(::ftruncate(fd_, kBytes), 0);
    void* m = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    ASSERT_NE(m, MAP_FAILED);
    mem_ = static_cast<uint8_t*>(m);
    std::memset(mem_, 7, kBytes);
  }
  void TearDown() override {
    alias_.reset();
    if (mem_ != nullptr) ::munmap(mem_, kBytes);
    if (fd_ >= 0) ::close(fd_);
  }
  std::unique_ptr<AliasProcess> alias_;
  int fd_ = -1;
  uint8_t* mem_ = nullptr;
};

TEST_F(AliasProcessTest, MapsTheFileAndItsPagesWhereMovePagesOfItsPidFindsThem) {
  const pid_t pid = alias_->pid();
  ASSERT_GT(pid, 0);
  EXPECT_NE(pid, ::getpid());
  absl::StatusOr<uint8_t*> at = alias_->Map(fd_, 0, kBytes, mem_);
  ASSERT_TRUE(at.ok()) << at.status();
  uint8_t* a = *at;
  EXPECT_EQ(a, mem_) << "the address was free in the child";
  const int here = NodeIn(0, mem_);
  ASSERT_GE(here, 0);
  // Mapped without page-table entries: nothing there until asked.
  EXPECT_EQ(NodeIn(pid, a), -ENOENT);
  ASSERT_TRUE(alias_->Populate({{a, 4 * 4096}, {a + 8 * 4096, 4096}}).ok());
  for (int i = 0; i < 16; ++i) {
    const bool asked = i < 4 || i == 8;
    EXPECT_EQ(NodeIn(pid, a + i * 4096), asked ? here : -ENOENT) << "page " << i;
  }
  // A move through the child's mapping (to where the page is: one node here).
  void* page = a + 4096;
  int to = here, status = -1;
  EXPECT_EQ(move_pages(pid, 1, &page, &to, &status, MPOL_MF_MOVE), 0);
  EXPECT_EQ(status, here);
  ASSERT_TRUE(alias_->Drop({{a, 16 * 4096}}).ok());
  for (int i = 0; i < 16; ++i) EXPECT_EQ(NodeIn(pid, a + i * 4096), -ENOENT) << "page " << i;
  // This process's mapping and the data were never touched.
  EXPECT_EQ(NodeIn(0, mem_ + 15 * 4096), here);
  EXPECT_EQ(mem_[5 * 4096 + 9], 7);
}

TEST_F(AliasProcessTest, WhereTheAddressIsTakenInTheChildItMapsElsewhere) {
  // Mapped twice: the second time, the first mapping holds the address.
  absl::StatusOr<uint8_t*> first = alias_->Map(fd_, 0, kBytes, mem_);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<uint8_t*> second = alias_->Map(fd_, 4096, kBytes - 4096, mem_);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*second, mem_);
  // The second maps the file from its second page on.
  ASSERT_TRUE(alias_->Populate({{*second, 4096}}).ok());
  EXPECT_GE(NodeIn(alias_->pid(), *second), 0);
  EXPECT_EQ(NodeIn(alias_->pid(), *first + 4096), -ENOENT);
}

TEST_F(AliasProcessTest, KeepsOnlyItsSocketOpenAndEndsWithItsOwner) {
  const pid_t pid = alias_->pid();
  ASSERT_TRUE(alias_->Map(fd_, 0, kBytes, mem_).ok());
  // Its first reply says it is past closing what it inherited; the file it
  // was sent is closed once mapped.
  EXPECT_EQ(OpenFds(pid), 1);
  alias_.reset();
  EXPECT_NE(::kill(pid, 0), 0);  // reaped: no such process
  EXPECT_EQ(errno, ESRCH);
}

TEST_F(AliasProcessTest, AChildThatIsGoneFailsEveryRequestWithOneLine) {
  ASSERT_EQ(::kill(alias_->pid(), SIGKILL), 0);
  absl::Status s = alias_->Populate({{mem_, 4096}});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(absl::StrCat("alias process ", alias_->pid())), std::string::npos)
      << s;
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);
  // From then on, at once.
  EXPECT_TRUE(absl::IsUnavailable(alias_->Drop({{mem_, 4096}})));
  EXPECT_TRUE(absl::IsUnavailable(alias_->Map(fd_, 0, kBytes, mem_).status()));
  // An empty request asks nothing of anyone.
  EXPECT_TRUE(alias_->Populate({}).ok());
}

TEST_F(AliasProcessTest, AnAddressTheChildDoesNotMapIsAnErrorNotACrash) {
  // Nothing mapped in the child there.
  absl::Status s = alias_->Populate({{mem_, 4096}});
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;  // ENOMEM: no mapping
  EXPECT_FALSE(alias_->Map(-1, 0, kBytes, mem_).ok());
  ASSERT_TRUE(alias_->Map(fd_, 0, kBytes, mem_).ok());
  EXPECT_TRUE(alias_->Populate({{mem_, 4096}}).ok());  // and it still serves
}

}  // namespace
}  // namespace numavm
