#include "cli/plot_command.h"

#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "cli/exit_codes.h"
#include "cli/report_plot.h"

namespace numavm {
namespace {

// A report of a week-long run with every series at its cap is a few MiB.
constexpr uint64_t kMaxReportBytes = 64ull << 20;

int Fail(const absl::Status& s, int code) {
  std::fprintf(stderr, "numavm plot: %s\n", std::string(s.message()).c_str());
  return code;
}

}  // namespace

int PlotCommand(const PlotFlags& flags) {
  std::string text;
  if (flags.report_path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    absl::StatusOr<RegularFile> file =
        RegularFile::Open(flags.report_path, "report", kMaxReportBytes);
    if (!file.ok()) return Fail(file.status(), kExitBadInput);
    absl::StatusOr<std::string> all = file->ReadAll();
    if (!all.ok()) return Fail(all.status(), kExitBadInput);
    text = std::move(*all);
  }
  const nlohmann::json report = nlohmann::json::parse(text, nullptr, false);
  if (report.is_discarded()) {
    return Fail(
        absl::InvalidArgumentError(absl::StrCat("report ", flags.report_path,
                                                ": not JSON (want the output "
                                                "of 'numavm run|replay|simulate --report json')")),
        kExitBadInput);
  }
  absl::StatusOr<std::string> svg = PlotReport(report);
  if (!svg.ok()) {
    return Fail(absl::InvalidArgumentError(
                    absl::StrCat("report ", flags.report_path, ": ", svg.status().message())),
                kExitBadInput);
  }
  if (absl::Status s = WritePlot(report, flags.svg_path); !s.ok()) {
    return Fail(s, kExitHostError);
  }
  return kExitOk;
}

}  // namespace numavm
