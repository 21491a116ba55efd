#include "balancer/actuation/page_migrator.h"

#include <numaif.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"

namespace numavm {

namespace {

absl::Duration Now() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

}  // namespace

absl::Status PageMigrator::MigrateBatch(const std::vector<PageMove>& batch, MigrationOutcome& out) {
  const absl::Duration t0 = Now();
  std::vector<void*> pages;
  std::vector<int> nodes, status(batch.size(), 0);
  for (const PageMove& m : batch) {
    pages.push_back(reinterpret_cast<void*>(m.address));
    nodes.push_back(m.to_node);
  }
  StagedPages staged = staging_ != nullptr && pid_ == 0 ? staging_->Stage(pages) : StagedPages{};
  const bool unmapped = staged.at.size() == pages.size();
  std::vector<void*>& at = unmapped ? staged.at : pages;
  const pid_t pid = unmapped ? staged.pid : pid_;
  const absl::Duration t1 = Now();
  long rc = move_pages(pid, at.size(), at.data(), nodes.data(), status.data(), MPOL_MF_MOVE);
  const int move_errno = errno;
  const absl::Duration t2 = Now();
  // The status array can be stale (-EBUSY for a page that did move): ask
  // where each page is now and judge by that.
  std::vector<int> where(batch.size(), 0);
  if (move_pages(pid, at.size(), at.data(), nullptr, where.data(), 0) < 0) {
    where = status;
  }
  const absl::Duration t3 = Now();
  if (unmapped) staging_->Unstage();
  ++times_.batches;
  times_.pages += batch.size();
  times_.stage += t1 - t0;
  times_.move += t2 - t1;
  times_.query += t3 - t2;
  times_.unstage += Now() - t3;
  if (rc < 0 && move_errno != ENOENT) {
    return ErrnoStatus(move_errno, "move_pages");
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    if (where[i] == batch[i].to_node) {
      ++out.moved;
      if (unmapped) ++out.moved_unmapped;
      out.bytes_moved += page_bytes_;
    } else if (status[i] == -EBUSY || status[i] == -EAGAIN) {
      ++out.busy;
      out.retry.push_back(batch[i]);
    } else if (status[i] == -ENOMEM) {
      ++out.no_memory;
    } else {
      ++out.failed;
    }
  }
  return absl::OkStatus();
}

void PageMigrator::set_max_time(absl::Duration max_time, Clock clock) {
  max_time_ = max_time;
  clock_ = clock ? std::move(clock) : Clock(Now);
}

absl::StatusOr<MigrationOutcome> PageMigrator::Migrate(const std::vector<PageMove>& moves,
                                                       absl::Duration now) {
  MigrationOutcome out;
  if (now != period_) {
    period_ = now;
    spent_ = absl::ZeroDuration();
  }
  const bool timed = max_time_ != absl::InfiniteDuration();
  if (timed && spent_ >= max_time_) {
    out.retry = moves;
    out.deferred = moves.size();
    return out;
  }
  const uint64_t wanted = moves.size() * page_bytes_;
  const uint64_t granted = limiter_ ? limiter_->Take(wanted, now) : wanted;
  const size_t granted_pages = static_cast<size_t>(granted / page_bytes_);
  if (limiter_) limiter_->GiveBack(granted - granted_pages * page_bytes_);
  size_t done = 0;  // pages attempted
  while (done < granted_pages) {
    if (timed && spent_ >= max_time_) break;  // the period's time is spent
    const size_t last = std::min(granted_pages, done + kBatchPages);
    std::vector<PageMove> batch(moves.begin() + done, moves.begin() + last);
    const absl::Duration start = timed ? clock_() : absl::ZeroDuration();
    absl::Status s = MigrateBatch(batch, out);
    if (timed) spent_ += clock_() - start;
    if (!s.ok()) return s;
    done = last;
  }
  for (size_t i = done; i < moves.size(); ++i) out.retry.push_back(moves[i]);
  out.deferred = moves.size() - done;
  // Pages that did not move give their share of the budget back (those the
  // time bound left unattempted too).
  if (limiter_) limiter_->GiveBack((granted_pages - out.moved) * page_bytes_);
  return out;
}

}  // namespace numavm
