#include "balancer/actuation/host_budget.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "balancer/control/runtime_dir.h"
#include "base/errno_status.h"

namespace numavm {
namespace {

constexpr uint64_t kMagic = 0x6e756d6162756431ull;  // "numabud1"

// The file's whole content. Plain data, the same layout in every process of
// one build; the magic catches anything else.
struct BudgetFile {
  uint64_t magic = kMagic;
  uint64_t rate = 0;    // bytes per second
  double tokens = 0;    // bytes
  int64_t last_ns = 0;  // CLOCK_MONOTONIC of the last refill
};

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {
    while (flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() { flock(fd_, LOCK_UN); }

 private:
  int fd_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<HostBudget>> HostBudget::Open(const std::string& dir,
                                                             uint64_t bytes_per_second) {
  if (absl::Status s = EnsureRuntimeDir(dir); !s.ok()) return s;
  const std::string path = absl::StrCat(dir, "/migration-budget");
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) {
    return ErrnoStatus(errno, absl::StrCat("host migration budget ", path));
  }
  std::unique_ptr<HostBudget> budget(new HostBudget(std::move(fd), bytes_per_second, path));
  // State this process's rate; a file that is not a budget starts full.
  budget->Update([&](double tokens) { return tokens; });
  return budget;
}

template <typename F>
double HostBudget::Update(F change) {
  FileLock lock(fd_.get());
  BudgetFile f;
  const int64_t now = MonotonicNs();
  const double burst = static_cast<double>(std::max<uint64_t>(rate_, 1));
  if (pread(fd_.get(), &f, sizeof(f), 0) != static_cast<ssize_t>(sizeof(f)) || f.magic != kMagic ||
      !(f.tokens >= 0) || f.last_ns < 0 || f.last_ns > now) {
    f = BudgetFile{kMagic, rate_, burst, now};
  }
  f.rate = rate_;
  f.tokens = std::min(
      burst, f.tokens + static_cast<double>(rate_) * static_cast<double>(now - f.last_ns) / 1e9);
  f.last_ns = now;
  const double before = f.tokens;
  f.tokens = std::clamp(change(f.tokens), 0.0, burst);
  // A failed write loses one update of the budget, never a migration; the
  // report says that the host-wide limit was not in force.
  if (pwrite(fd_.get(), &f, sizeof(f), 0) != static_cast<ssize_t>(sizeof(f))) {
    const int err = errno;
    if (failed_writes_.fetch_add(1) == 0) {
      absl::MutexLock l(&mu_);
      first_error_ = std::string(ErrnoStatus(err, "write").message());
    }
  }
  return before;
}

std::string HostBudget::Problem() const {
  const uint64_t failed = failed_writes_.load();
  if (failed == 0) return std::string();
  absl::MutexLock l(&mu_);
  return absl::StrCat("host migration budget not in force: ", failed, " updates of ", path_,
                      " failed (", first_error_, ")");
}

uint64_t HostBudget::Take(uint64_t bytes) {
  uint64_t granted = 0;
  Update([&](double tokens) {
    granted = std::min<uint64_t>(bytes, static_cast<uint64_t>(tokens));
    return tokens - static_cast<double>(granted);
  });
  return granted;
}

void HostBudget::GiveBack(uint64_t bytes) {
  Update([&](double tokens) { return tokens + static_cast<double>(bytes); });
}

}  // namespace numavm
