// The sampler and scan settings of `numavm run` (declared in
// cli/run_options.h), shared by the flags and the config file.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/size.h"
#include "cli/run_options.h"

namespace numavm {

absl::Status SetSampler(absl::string_view sampler, RunOptions& options) {
  absl::StatusOr<SamplerKind> kind = ParseSamplerKind(sampler);
  if (!kind.ok()) return kind.status();
  options.sampling.sampler = *kind;
  options.sampling.sampler_chosen = true;
  return absl::OkStatus();
}

absl::Status SetScanWindow(absl::string_view text, RunOptions& options) {
  absl::StatusOr<uint64_t> bytes = ParseSize(text);
  if (!bytes.ok()) return bytes.status();
  if (*bytes < 4096) {
    return absl::InvalidArgumentError(absl::StrCat("scan window '", text, "' is under 4K"));
  }
  options.sampling.window_bytes = *bytes;
  return absl::OkStatus();
}

absl::Status SetScanPeriod(absl::string_view text, RunOptions& options) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok()) return d.status();
  if (*d < absl::Milliseconds(10)) {
    return absl::InvalidArgumentError(absl::StrCat("scan period '", text, "' is under 10ms"));
  }
  options.sampling.period = *d;
  return absl::OkStatus();
}

absl::Status SetScanStallBudget(absl::string_view text, RunOptions& options) {
  std::string t(text);
  const bool percent = absl::EndsWith(t, "%");
  if (percent) t.pop_back();
  double v;
  if (!absl::SimpleAtod(t, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a share of vCPU time (e.g. 1% or 0.01)"));
  }
  if (percent) v /= 100;
  if (!(v > 0 && v <= 0.5)) {
    return absl::InvalidArgumentError(
        absl::StrCat("stall budget '", text, "' must be above 0 and at most 50%"));
  }
  options.sampling.rate.stall_budget = v;
  return absl::OkStatus();
}

namespace {

absl::StatusOr<uint64_t> ParseScanRate(absl::string_view text) {
  std::string t(text);
  if (absl::EndsWith(t, "/s")) t.resize(t.size() - 2);
  absl::StatusOr<uint64_t> bytes = ParseSize(t);
  if (!bytes.ok() || *bytes < 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", text, "' is not a rate of at least 4K per second (e.g. 64M)"));
  }
  return *bytes;
}

}  // namespace

absl::Status SetScanRateMin(absl::string_view text, RunOptions& options) {
  absl::StatusOr<uint64_t> r = ParseScanRate(text);
  if (!r.ok()) return r.status();
  options.sampling.rate.min_bytes_per_second = *r;
  return absl::OkStatus();
}

absl::Status SetScanRateMax(absl::string_view text, RunOptions& options) {
  absl::StatusOr<uint64_t> r = ParseScanRate(text);
  if (!r.ok()) return r.status();
  options.sampling.rate.max_bytes_per_second = *r;
  return absl::OkStatus();
}

absl::Status SetScanProbes(int64_t probes, RunOptions& options) {
  if (probes < 1 || probes > 512) {
    return absl::InvalidArgumentError(absl::StrCat(probes, " probes per 2 MiB region: want 1-512"));
  }
  options.sampling.rate.probes_per_region = static_cast<int>(probes);
  return absl::OkStatus();
}

absl::Status SetScanPeriodMax(absl::string_view text, RunOptions& options) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok()) return d.status();
  options.sampling.period_max = *d;
  return absl::OkStatus();
}

}  // namespace numavm
