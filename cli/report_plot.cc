#include "cli/report_plot.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "balancer/report/svg_plot.h"
#include "cli/exit_codes.h"

namespace numavm {
namespace {

constexpr int kPanelHeight = 420;  // svg_plot.cc's height

using Points = std::vector<std::pair<double, double>>;

// (seconds, member) of each point of a series of objects.
Points Series(const nlohmann::json& series, const char* member, double scale = 1) {
  Points out;
  if (!series.is_array()) return out;
  for (const nlohmann::json& p : series) {
    if (!p.is_object() || !p.contains("seconds") || !p.contains(member)) continue;
    if (!p["seconds"].is_number() || !p[member].is_number()) continue;
    out.emplace_back(p["seconds"].get<double>(), p[member].get<double>() * scale);
  }
  return out;
}

double MaxY(const std::vector<PlotSeries>& series) {
  double m = 0;
  for (const PlotSeries& s : series) {
    for (auto [x, y] : s.points) m = std::max(m, y);
  }
  return m;
}

// A horizontal reference line over the x range of `like`.
PlotSeries Level(const std::string& name, double y, const Points& like) {
  PlotSeries s{name, {}, true};
  if (!like.empty()) s.points = {{std::min(0.0, like.front().first), y}, {like.back().first, y}};
  return s;
}

// Pages migrated so far; with `fewest`, the fewest moves that reach the
// best placement as a dashed level.
PlotSpec PagesPanel(const std::string& title, const nlohmann::json& series,
                    const nlohmann::json& fewest) {
  PlotSpec p;
  p.title = title;
  p.y_percent = false;
  Points pages = Series(series, "pages_migrated");
  double most = 0;
  for (auto [x, y] : pages) most = std::max(most, y);
  if (fewest.is_number()) most = std::max(most, fewest.get<double>());
  const double scale = most >= 10000 ? 1e-3 : 1;
  p.y_label = scale < 1 ? "thousand pages" : "pages";
  for (auto& [x, y] : pages) y *= scale;
  p.series.push_back({"pages migrated", pages, false});
  if (fewest.is_number()) {
    p.series.push_back(Level("fewest to best", fewest.get<double>() * scale, pages));
  }
  p.y_max = std::max(1.0, MaxY(p.series) * 1.05);
  return p;
}

std::vector<PlotSpec> SimulatePanels(const nlohmann::json& r) {
  PlotSpec loc;
  loc.title = "simulate: ground-truth locality over time";
  loc.series.push_back({"ground truth", Series(r["locality_series"], "locality"), false});
  loc.series.push_back({"best", Series(r["locality_series"], "best"), true});
  loc.series.push_back({"sampled access",
                        Series(r["balance"].value("locality_series", nlohmann::json()), "locality"),
                        false});
  return {loc, PagesPanel("simulate: pages migrated", r["locality_series"],
                          r.value("min_page_moves", nlohmann::json()))};
}

std::vector<PlotSpec> ReplayPanels(const nlohmann::json& r) {
  const nlohmann::json& gt = r["ground_truth"];
  PlotSpec loc;
  loc.title = "replay: ground-truth locality over time";
  Points truth = Series(gt.value("locality_series", nlohmann::json()), "locality");
  loc.series.push_back({"ground truth", truth, false});
  if (r["best"].contains("locality") && r["best"]["locality"].is_number()) {
    loc.series.push_back(Level("best", r["best"]["locality"].get<double>(), truth));
  }
  loc.series.push_back({"sampled access",
                        Series(r["balance"].value("locality_series", nlohmann::json()), "locality"),
                        false});
  return {loc, PagesPanel("replay: pages migrated", gt.value("locality_series", nlohmann::json()),
                          r["best"].value("min_page_moves", nlohmann::json()))};
}

std::vector<PlotSpec> RunPanels(const nlohmann::json& r) {
  std::vector<PlotSpec> panels;
  const nlohmann::json balance_series = r["balance"].value("locality_series", nlohmann::json());
  const nlohmann::json placement = r.value("placement_series", nlohmann::json::array());
  PlotSpec loc;
  loc.title = absl::StrCat("run ", r.value("payload", std::string()), ": locality over time");
  Points access = Series(balance_series, "locality");
  loc.series.push_back({"sampled access", access, false});
  Points placed = Series(placement, "placement_locality");
  if (!placed.empty()) loc.series.push_back({"placement", placed, false});
  // HARD_BIND (--placement=hard) puts every vCPU's memory on its node.
  loc.series.push_back(Level("HARD bind", 1.0, !placed.empty() ? placed : access));
  panels.push_back(loc);
  if (placement.is_array() && !placement.empty()) {
    PlotSpec mem;
    mem.title = "run: guest memory per host node";
    mem.y_percent = false;
    mem.y_label = "MiB";
    std::vector<std::string> nodes;
    for (const nlohmann::json& p : placement) {
      if (!p.contains("bytes_per_node") || !p["bytes_per_node"].is_object()) continue;
      for (const auto& [node, bytes] : p["bytes_per_node"].items()) {
        if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
      }
    }
    std::sort(nodes.begin(), nodes.end());
    for (const std::string& node : nodes) {
      Points pts;
      for (const nlohmann::json& p : placement) {
        if (!p.contains("seconds") || !p["seconds"].is_number()) continue;
        const nlohmann::json& b = p.value("bytes_per_node", nlohmann::json::object());
        const double bytes = b.contains(node) && b[node].is_number() ? b[node].get<double>() : 0;
        pts.emplace_back(p["seconds"].get<double>(), bytes / (1 << 20));
      }
      mem.series.push_back({absl::StrCat("node ", node), pts, false});
    }
    mem.y_max = std::max(1.0, MaxY(mem.series) * 1.05);
    panels.push_back(mem);
  }
  panels.push_back(PagesPanel("run: pages migrated", balance_series, nlohmann::json()));
  return panels;
}

bool HasPoints(const std::vector<PlotSpec>& panels) {
  for (const PlotSpec& p : panels) {
    for (const PlotSeries& s : p.series) {
      if (!s.points.empty() && !s.dashed) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::string> PlotReport(const nlohmann::json& report) {
  if (!report.is_object() || !report.contains("command") || !report["command"].is_string()) {
    return absl::InvalidArgumentError("not a numavm JSON report (no \"command\")");
  }
  const std::string command = report["command"].get<std::string>();
  std::vector<PlotSpec> panels;
  try {
    if (command == "simulate") {
      panels = SimulatePanels(report);
    } else if (command == "replay") {
      panels = ReplayPanels(report);
    } else if (command == "run") {
      panels = RunPanels(report);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("a '", command,
                       "' report has no series over time (plots are of run, replay and "
                       "simulate reports)"));
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("not a ", command, " report: ", e.what()));
  }
  if (!HasPoints(panels)) {
    return absl::InvalidArgumentError(
        "the report has no points over time to plot (nothing was sampled, or the run was "
        "shorter than one period)");
  }
  const int height = kPanelHeight * static_cast<int>(panels.size());
  std::string out =
      absl::StrCat("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"", height,
                   "\" viewBox=\"0 0 720 ", height, "\">\n");
  for (size_t i = 0; i < panels.size(); ++i) {
    // Each panel is a whole SVG of its own, placed below the one before.
    std::string panel = RenderSvg(panels[i]);
    panel = absl::StrReplaceAll(
        panel, {{"<svg xmlns=\"http://www.w3.org/2000/svg\" ",
                 absl::StrCat("<svg x=\"0\" y=\"", kPanelHeight * static_cast<int>(i), "\" ")}});
    absl::StrAppend(&out, panel);
  }
  absl::StrAppend(&out, "</svg>\n");
  return out;
}

int PlotIfAsked(const char* command, const nlohmann::json& report, const std::string& path) {
  if (path.empty()) return kExitOk;
  if (absl::Status s = WritePlot(report, path); !s.ok()) {
    std::fprintf(stderr, "numavm %s: --plot: %s\n", command, std::string(s.message()).c_str());
    return kExitHostError;
  }
  return kExitOk;
}

absl::Status CheckPlotPath(const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) {
    return absl::InvalidArgumentError(
        absl::StrCat("--plot '", path, "': cannot write it: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status WritePlot(const nlohmann::json& report, const std::string& path) {
  absl::StatusOr<std::string> svg = PlotReport(report);
  if (!svg.ok()) return svg.status();
  std::ofstream f(path, std::ios::trunc);
  f << *svg;
  f.close();
  if (!f) {
    return absl::UnavailableError(
        absl::StrCat("could not write the plot to '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace numavm
