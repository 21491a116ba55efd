// `numavm plot REPORT.json FILE.svg`: the picture of a saved run, replay or
// simulate report (cli/report_plot.h), as --plot draws it.
#ifndef NUMAVM_CLI_PLOT_COMMAND_H_
#define NUMAVM_CLI_PLOT_COMMAND_H_

#include <string>

namespace numavm {

struct PlotFlags {
  std::string report_path;  // '-': standard input
  std::string svg_path;
};

int PlotCommand(const PlotFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_PLOT_COMMAND_H_
