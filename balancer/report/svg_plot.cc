#include "balancer/report/svg_plot.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace numavm {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 70, kRight = 180, kTop = 40, kBottom = 55;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A round step giving about `n` ticks over `span`.
double NiceStep(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (raw <= m * mag) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::string RenderSvg(const PlotSpec& spec) {
  double x_min = 0, x_max = 0;
  bool any = false;
  for (const PlotSeries& s : spec.series) {
    for (auto [x, y] : s.points) {
      x_min = any ? std::min(x_min, x) : std::min(0.0, x);
      x_max = any ? std::max(x_max, x) : x;
      any = true;
    }
  }
  if (!any || x_max <= x_min) x_max = x_min + 1;
  const double y_span = spec.y_max > spec.y_min ? spec.y_max - spec.y_min : 1;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) {
    const double c = std::clamp(y, spec.y_min, spec.y_max);
    return kTop + plot_h - (c - spec.y_min) / y_span * plot_h;
  };
  std::string out = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(
      &out,
      absl::StrFormat("<text x=\"%.0f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n",
                      kLeft, Escape(spec.title)));
  // Grid and ticks.
  const double xs = NiceStep(x_max - x_min, 8);
  for (double x = std::ceil(x_min / xs) * xs; x <= x_max + 1e-9; x += xs) {
    absl::StrAppend(
        &out, absl::StrFormat(
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                  px(x), kTop, px(x), kTop + plot_h, px(x), kTop + plot_h + 18,
                  absl::StrFormat("%g", x)));
  }
  const double ys = NiceStep(y_span, 5);
  for (double y = std::ceil(spec.y_min / ys) * ys; y <= spec.y_max + 1e-9; y += ys) {
    const std::string label =
        spec.y_percent ? absl::StrFormat("%.0f%%", 100 * y) : absl::StrFormat("%g", y);
    absl::StrAppend(
        &out, absl::StrFormat(
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e0e0e0\"/>\n"
                  "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                  kLeft, py(y), kLeft + plot_w, py(y), kLeft - 8, py(y) + 4, label));
  }
  // Axes and their labels.
  absl::StrAppend(
      &out,
      absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
                      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n"
                      "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 "
                      "%.1f)\">%s</text>\n",
                      kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, kLeft, kTop, kLeft,
                      kTop + plot_h, kLeft + plot_w / 2, kHeight - 12, Escape(spec.x_label),
                      kTop + plot_h / 2, kTop + plot_h / 2, Escape(spec.y_label)));
  // Series and legend. Dashed references are drawn first, then the
  // measured series from the last to the first, so that where lines
  // coincide the first (the main one) is on top; each keeps the colour of
  // its place in the legend.
  std::vector<size_t> order;
  for (size_t i = 0; i < spec.series.size(); ++i) {
    if (spec.series[i].dashed) order.push_back(i);
  }
  for (size_t i = spec.series.size(); i-- > 0;) {
    if (!spec.series[i].dashed) order.push_back(i);
  }
  for (size_t i : order) {
    const PlotSeries& s = spec.series[i];
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string points;
    for (auto [x, y] : s.points)
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", px(x), py(y)));
    const char* dash = s.dashed ? " stroke-dasharray=\"6,4\"" : "";
    if (s.points.size() == 1) {
      absl::StrAppend(&out,
                      absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                                      px(s.points[0].first), py(s.points[0].second), color));
    } else if (!s.points.empty()) {
      absl::StrAppend(
          &out, absl::StrFormat(
                    "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"%s\"/>\n",
                    color, dash, points));
    }
    const double ly = kTop + 10 + 20 * static_cast<double>(i);
    absl::StrAppend(&out, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                          "stroke=\"%s\" stroke-width=\"2\"%s/>\n"
                                          "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n",
                                          kLeft + plot_w + 15, ly, kLeft + plot_w + 40, ly, color,
                                          dash, kLeft + plot_w + 46, ly + 4, Escape(s.name)));
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

}  // namespace numavm
