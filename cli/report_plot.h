// Pictures of a JSON report: `--plot FILE` on run, replay and simulate and
// `numavm plot REPORT.json FILE`. Both draw from the JSON report (the
// saved one or the one just made), so a plot never shows what the report
// does not say. One standalone SVG (balancer/report/svg_plot.h), panels
// stacked: locality over time against the best placement (replay,
// simulate) or against HARD binding (run), memory per node over time (run,
// with placement sampling), pages migrated over time.
#ifndef NUMAVM_CLI_REPORT_PLOT_H_
#define NUMAVM_CLI_REPORT_PLOT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace numavm {

// InvalidArgument for a report that is not one of run, replay or simulate,
// or that has no series over time.
absl::StatusOr<std::string> PlotReport(const nlohmann::json& report);

// Fails early (before a long run) if `path` cannot be written: creates it
// (or truncates it) and leaves it empty. InvalidArgument with the reason.
absl::Status CheckPlotPath(const std::string& path);
// PlotReport, written to `path`.
absl::Status WritePlot(const nlohmann::json& report, const std::string& path);

// For run, replay and simulate after their report is printed: with a
// `path`, writes the plot; the exit status then is 0, or kExitHostError
// (5) with one line on stderr if the plot could not be made or written.
int PlotIfAsked(const char* command, const nlohmann::json& report, const std::string& path);

}  // namespace numavm

#endif  // NUMAVM_CLI_REPORT_PLOT_H_
