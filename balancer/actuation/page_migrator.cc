#include "balancer/actuation/page_migrator.h"

#include <numaif.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/thread_cpu.h"

namespace numavm {

namespace {

absl::Duration Now() {
  return absl::FromChrono(std::chrono::steady_clock::now().time_since_epoch());
}

// Adds a worker's outcome to the call's (a worker defers nothing: the
// deferred moves are the call's).
void Merge(const MigrationOutcome& w, MigrationOutcome& out) {
  out += w;
  out.retry.insert(out.retry.end(), w.retry.begin(), w.retry.end());
}

}  // namespace

int WorkersFor(size_t batches, absl::Duration batch_cost, absl::Duration target, int max_workers) {
  if (batches <= 1 || max_workers <= 1 || batch_cost <= absl::ZeroDuration()) return 1;
  if (target <= absl::ZeroDuration())
    return static_cast<int>(std::min<size_t>(batches, max_workers));
  const double need =
      std::ceil(absl::FDivDuration(batch_cost * static_cast<double>(batches), target));
  const double most = static_cast<double>(std::min<size_t>(batches, max_workers));
  return static_cast<int>(std::clamp(need, 1.0, most));
}

absl::Status PageMigrator::MigrateBatch(const std::vector<PageMove>& batch, MigrationOutcome& out,
                                        MoveTimes& times) {
  const absl::Duration t0 = Now();
  std::vector<void*> pages;
  std::vector<int> nodes, status(batch.size(), 0);
  for (const PageMove& m : batch) {
    pages.push_back(reinterpret_cast<void*>(m.address));
    nodes.push_back(m.to_node);
  }
  StagedPages staged = staging_ != nullptr && pid_ == 0 ? staging_->Stage(pages) : StagedPages{};
  const bool unmapped = staged.at.size() == pages.size();
  const bool was_staged = unmapped || staged.in_place;
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
  if (was_staged) staging_->Unstage();
  ++times.batches;
  times.pages += batch.size();
  times.stage += t1 - t0;
  times.move += t2 - t1;
  times.query += t3 - t2;
  times.unstage += Now() - t3;
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
    if (spare_cpus_) {
      double spare = spare_cpus_();
      const absl::Duration wall = now - period_;
      if (spare >= 0 && wall > absl::ZeroDuration() && wall != absl::InfiniteDuration()) {
        spare += absl::FDivDuration(times_.helper_cpu - helper_cpu_at_spare_, wall);
      }
      spare_ = spare;
      helper_cpu_at_spare_ = times_.helper_cpu;
    }
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
  const size_t batches = (granted_pages + kBatchPages - 1) / kBatchPages;
  int allowed = max_workers_;
  if (spare_cpus_) allowed = spare_ < 0 ? 1 : std::min(allowed, 1 + static_cast<int>(spare_));
  const int workers =
      timed && staging_ == nullptr
          ? WorkersFor(batches, batch_cost_, std::min(kSoloTime, max_time_) - spent_, allowed)
          : 1;
  size_t done = 0;  // pages attempted
  if (workers > 1) {
    absl::StatusOr<size_t> attempted = MigrateShared(moves, granted_pages, workers, out);
    if (!attempted.ok()) return attempted.status();
    done = *attempted;
  } else {
    while (done < granted_pages) {
      if (timed && spent_ >= max_time_) break;  // the period's time is spent
      const size_t last = std::min(granted_pages, done + kBatchPages);
      std::vector<PageMove> batch(moves.begin() + done, moves.begin() + last);
      const absl::Duration start = timed ? clock_() : absl::ZeroDuration();
      absl::Status s = MigrateBatch(batch, out, times_);
      if (timed) {
        const absl::Duration took = clock_() - start;
        spent_ += took;
        Measured(took, batch.size());
      }
      if (!s.ok()) return s;
      done = last;
    }
  }
  for (size_t i = done; i < moves.size(); ++i) out.retry.push_back(moves[i]);
  out.deferred = moves.size() - done;
  // Pages that did not move give their share of the budget back (those the
  // time bound left unattempted too).
  if (limiter_) limiter_->GiveBack((granted_pages - out.moved) * page_bytes_);
  return out;
}

void PageMigrator::Measured(absl::Duration took, size_t pages) {
  if (pages == 0) return;
  const absl::Duration full =
      took * (static_cast<double>(kBatchPages) / static_cast<double>(pages));
  batch_cost_ = batch_cost_ <= absl::ZeroDuration() ? full : (batch_cost_ * 3 + full) / 4;
}

absl::StatusOr<size_t> PageMigrator::MigrateShared(const std::vector<PageMove>& moves,
                                                   size_t granted_pages, int workers,
                                                   MigrationOutcome& out) {
  // Batches are claimed in order, so those never claimed - the period's
  // time ran out, or a batch failed - are the tail of the granted moves.
  const size_t batches = (granted_pages + kBatchPages - 1) / kBatchPages;
  const absl::Duration start = clock_();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  struct Share {
    MigrationOutcome out;
    MoveTimes times;
    absl::Status status;
    absl::Duration cost;  // of its batches, summed
    size_t pages = 0;
  };
  std::vector<Share> shares(static_cast<size_t>(workers));
  auto work = [&](Share& share) {
    while (!failed.load(std::memory_order_relaxed)) {
      if (spent_ + (clock_() - start) >= max_time_) return;
      const size_t b = next.fetch_add(1);
      if (b >= batches) return;
      const size_t first = b * kBatchPages;
      const size_t last = std::min(granted_pages, first + kBatchPages);
      std::vector<PageMove> batch(moves.begin() + first, moves.begin() + last);
      const absl::Duration t0 = clock_();
      share.status = MigrateBatch(batch, share.out, share.times);
      share.cost += clock_() - t0;
      share.pages += batch.size();
      if (!share.status.ok()) {
        failed = true;
        return;
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t w = 1; w < shares.size(); ++w) {
    try {
      helpers.emplace_back([&work, &share = shares[w]] {
        const absl::Duration cpu = ThreadCpuTime();
        work(share);
        share.times.helper_cpu += ThreadCpuTime() - cpu;
      });
    } catch (const std::system_error&) {
      break;  // no thread to be had now: fewer share the batches
    }
  }
  work(shares[0]);
  for (std::thread& t : helpers) t.join();
  spent_ += clock_() - start;
  const int used = static_cast<int>(helpers.size()) + 1;
  if (used > 1) ++times_.parallel_calls;
  times_.most_workers = std::max(times_.most_workers, used);
  absl::Duration cost;
  size_t pages = 0;
  for (const Share& share : shares) {
    if (!share.status.ok()) return share.status;
    Merge(share.out, out);
    times_ += share.times;
    cost += share.cost;
    pages += share.pages;
  }
  Measured(cost, pages);
  return std::min(granted_pages, std::min(next.load(), batches) * kBatchPages);
}

}  // namespace numavm
