// docs/report-schema.json and docs/report-format.md describe what numavm
// really prints: every decision reason the balancer counts is allowed by
// the schema and explained in the docs, and the envelope is what the
// schema requires.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "balancer/balancer_counters.h"
#include "cli/report_envelope.h"

namespace numavm {
namespace {

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(NUMAVM_SOURCE_DIR) + "/docs/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ReportSchema, EveryDecisionReasonIsInTheSchemaAndExplained) {
  const nlohmann::json schema = nlohmann::json::parse(ReadDoc("report-schema.json"));
  const nlohmann::json& reasons = schema["$defs"]["decision_reason"]["enum"];
  const std::string format = ReadDoc("report-format.md");
  ASSERT_EQ(reasons.size(), static_cast<size_t>(Decision::kCount));
  for (size_t i = 0; i < static_cast<size_t>(Decision::kCount); ++i) {
    const std::string name = DecisionName(static_cast<Decision>(i));
    EXPECT_NE(std::find(reasons.begin(), reasons.end(), name), reasons.end()) << name;
    EXPECT_NE(format.find("| `" + name + "` |"), std::string::npos)
        << name << " is not explained in docs/report-format.md";
  }
}

TEST(ReportSchema, EnvelopeIsWhatTheSchemaRequires) {
  const nlohmann::json schema = nlohmann::json::parse(ReadDoc("report-schema.json"));
  unsetenv("SOURCE_DATE_EPOCH");
  const nlohmann::json j =
      WithReportEnvelope("simulate", {{"x", 1}}, absl::FromUnixSeconds(1764547200));
  for (const auto& field : schema["required"]) {
    EXPECT_TRUE(j.contains(field.get<std::string>())) << field;
  }
  EXPECT_EQ(j["schema_version"], schema["properties"]["schema_version"]["const"]);
  EXPECT_EQ(j["generated_at"], "2025-12-01T00:00:00Z");
  EXPECT_EQ(j["x"], 1);
  setenv("SOURCE_DATE_EPOCH", "0", 1);
  EXPECT_EQ(WithReportEnvelope("run", {})["generated_at"], "1970-01-01T00:00:00Z");
  setenv("SOURCE_DATE_EPOCH", "soon", 1);  // not whole seconds: the real time
  EXPECT_EQ(WithReportEnvelope("run", {}, absl::FromUnixSeconds(60))["generated_at"],
            "1970-01-01T00:01:00Z");
  unsetenv("SOURCE_DATE_EPOCH");
}

}  // namespace
}  // namespace numavm
