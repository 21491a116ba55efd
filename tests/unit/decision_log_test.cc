// `numavm run --log-decisions`: what a user reads on stderr to see why memory
// moved, and the flag's one rule.
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "cli/balance_report.h"
#include "cli/run_options.h"

namespace numavm {
namespace {

TEST(LogDecisions, EachDecisionIsOneLineWithTheRunsTimePagesNodesAndReason) {
  const VmBalancer::Advice log = DecisionsOnStderr(absl::Now() - absl::Seconds(12));
  testing::internal::CaptureStderr();
  log(0x200, 512, 0, 2, "region-follow");
  log(0x1234, 1, -1, 1, "page-move");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::StrContains(
      out, " s decided: move gfns 0x200+512 from node index 0 to 2 (region-follow)\n"))
      << out;
  EXPECT_TRUE(absl::StrContains(out, "numavm: 12.")) << out;
  EXPECT_TRUE(absl::StrContains(out, "move gfns 0x1234+1 from node index -1 to 1 (page-move)\n"))
      << out;
}

TEST(LogDecisions, WithBalancingOffTheFlagIsRefusedWithTheWayOut) {
  RunFlags off;
  off.log_decisions = true;
  absl::StatusOr<RunOptions> o = ResolveRunOptions(off);
  ASSERT_FALSE(o.ok());
  EXPECT_TRUE(absl::StrContains(o.status().message(), "--balance on")) << o.status();
  for (const char* mode : {"on", "advise"}) {
    RunFlags f;
    f.log_decisions = true;
    f.balance = mode;
    absl::StatusOr<RunOptions> r = ResolveRunOptions(f);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->log_decisions);
  }
}

}  // namespace
}  // namespace numavm
