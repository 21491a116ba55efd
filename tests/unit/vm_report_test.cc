#include "balancer/report/vm_report.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace numavm {
namespace {

VmReport Sample() {
  VmReport r;
  r.name = "web \"1\"";
  r.kind = "libvirt";
  r.manager = "numavm daemon";
  r.uuid = "6695eb01";
  r.mode = "on";
  r.home_nodes = {0, 1};
  r.vcpus = 4;
  r.memory_bytes = 1 << 30;
  r.memory_per_node = {{0, 3 << 28}, {1, 1 << 28}};
  r.vcpus_per_node = {{0, 4}};
  r.pages_migrated = 7;
  r.access_locality = 0.5;
  r.access_source = "kernel";
  return r;
}

TEST(VmReport, PlacementLocalityIsVcpuShareTimesMemoryShare) {
  EXPECT_DOUBLE_EQ(PlacementLocality({{0, 4}}, {{0, 3}, {1, 1}}), 0.75);
  EXPECT_DOUBLE_EQ(PlacementLocality({{0, 2}, {1, 2}}, {{0, 1}, {1, 1}}), 0.5);
  EXPECT_DOUBLE_EQ(PlacementLocality({{1, 2}}, {{0, 5}}), 0.0);
  EXPECT_DOUBLE_EQ(PlacementLocality({}, {{0, 5}}), 0.0);
}

TEST(VmReport, JsonRoundTrips) {
  absl::StatusOr<VmReport> back = VmReportFromJson(ToJson(Sample()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->name, "web \"1\"");
  EXPECT_EQ(back->memory_per_node, Sample().memory_per_node);
  EXPECT_EQ(back->vcpus_per_node, Sample().vcpus_per_node);
  EXPECT_EQ(back->pages_migrated, 7u);
  ASSERT_TRUE(back->access_locality.has_value());
  EXPECT_DOUBLE_EQ(*back->access_locality, 0.5);
  EXPECT_EQ(back->access_source, "kernel");
  VmReport unmeasured = Sample();
  unmeasured.access_locality.reset();
  unmeasured.access_source.clear();
  EXPECT_TRUE(ToJson(unmeasured)["access_source"].is_null());
  EXPECT_FALSE(VmReportFromJson(nlohmann::json::array()).ok());
  nlohmann::json bad = ToJson(Sample());
  bad["memory_per_node"] = {{"zero", 1}};
  EXPECT_FALSE(VmReportFromJson(bad).ok());
}

TEST(VmReport, PrometheusTextHasOneSeriesPerVmAndNodeWithEscapedLabels) {
  const std::string text = ReportsToPrometheus({Sample()});
  EXPECT_NE(text.find("# TYPE numavm_vm_pages_migrated_total counter\n"), std::string::npos);
  // Labels as libvirt-exporter names them (domain=, uuid=), values escaped.
  const std::string labels = "domain=\"web \\\"1\\\"\",uuid=\"6695eb01\",kind=\"libvirt\"";
  EXPECT_NE(text.find("numavm_vm_vcpus{" + labels + "} 4\n"), std::string::npos) << text;
  EXPECT_NE(text.find("numavm_vm_node_memory_bytes{" + labels + ",node=\"1\"} 268435456\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("numavm_vm_access_locality_ratio{" + labels + "} 0.500000\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("numavm_vm_placement_locality_ratio{" + labels + "} "), std::string::npos);
  EXPECT_NE(text.find("numavm_vm_bytes_migrated_total{" + labels + "} "), std::string::npos);
  EXPECT_NE(text.find("numavm_vm_info{" + labels +
                      ",manager=\"numavm daemon\",mode=\"on\",home_nodes=\"0,1\"} 1\n"),
            std::string::npos)
      << text;
  // Every line is a comment or "series value".
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# ", 0) == 0) continue;
    EXPECT_NE(line.rfind("numavm_vm_", 0), std::string::npos) << line;
    EXPECT_NE(line.find("} "), std::string::npos) << line;
  }
}

// A long VM name (libvirt allows any length) or many nodes widen their
// column; the columns after it still line up with the header.
TEST(VmReport, TableColumnsFitTheLongestName) {
  VmReport shortname = Sample();
  shortname.name = "a";
  VmReport longname = Sample();
  longname.name = "production-database-primary-eu-west-1";
  longname.memory_per_node = {{0, 1ull << 30}, {1, 1ull << 30}, {2, 1ull << 30}, {3, 1ull << 30}};
  const std::string table = ReportsToTable({shortname, longname});
  std::istringstream lines(table);
  std::vector<std::string> rows;  // the header, then one row per VM
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  ", 0) != 0) rows.push_back(line);  // not a status line
  }
  ASSERT_EQ(rows.size(), 3u) << table;
  const size_t kind = rows[0].find("kind");
  ASSERT_NE(kind, std::string::npos);
  EXPECT_GT(kind, longname.name.size()) << table;
  EXPECT_EQ(rows[1].substr(kind, 7), "libvirt") << table;
  EXPECT_EQ(rows[2].substr(kind, 7), "libvirt") << table;
  // The placement locality ("0.0%") ends at the same column in both rows,
  // under its header.
  EXPECT_EQ(rows[1].find('%'), rows[2].find('%')) << table;
  EXPECT_EQ(rows[1].find('%'), rows[0].find("place") + 4) << table;
}

}  // namespace
}  // namespace numavm
