// Line plots as standalone SVG, written by numavm itself (no plotting
// runtime needed): convergence of locality over time for `numavm plot`,
// the NUMA lab's table and the docs. Axes with ticks and labels, one
// polyline per series, a legend.
#ifndef NUMAVM_BALANCER_REPORT_SVG_PLOT_H_
#define NUMAVM_BALANCER_REPORT_SVG_PLOT_H_

#include <string>
#include <utility>
#include <vector>

namespace numavm {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  bool dashed = false;
};

struct PlotSpec {
  std::string title;
  std::string x_label = "seconds";
  std::string y_label = "locality";
  // The y axis spans [y_min, y_max]; x from 0 (or the least x) to the
  // greatest x of any series.
  double y_min = 0;
  double y_max = 1;
  bool y_percent = true;  // tick labels as percentages
  std::vector<PlotSeries> series;
};

std::string RenderSvg(const PlotSpec& spec);

}  // namespace numavm

#endif  // NUMAVM_BALANCER_REPORT_SVG_PLOT_H_
