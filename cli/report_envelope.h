// What every JSON report of numavm starts with (run, replay, simulate,
// report, attach): the schema it follows (docs/report-format.md,
// docs/report-schema.json), when and by which numavm and command it was
// made.
#ifndef NUMAVM_CLI_REPORT_ENVELOPE_H_
#define NUMAVM_CLI_REPORT_ENVELOPE_H_

#include <nlohmann/json.hpp>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace numavm {

inline constexpr const char* kNumavmVersion = "0.1.0";
// Raised whenever a field changes meaning or goes away (adding one does
// not raise it).
inline constexpr int kReportSchemaVersion = 1;

// schema_version, generated_at (UTC, RFC 3339 to the second), command,
// numavm_version - then `body`'s own fields. generated_at is
// $SOURCE_DATE_EPOCH when that is set to whole seconds (reproducible
// output, as in reproducible builds), else `now`.
nlohmann::json WithReportEnvelope(absl::string_view command, nlohmann::json body,
                                  absl::Time now = absl::Now());

}  // namespace numavm

#endif  // NUMAVM_CLI_REPORT_ENVELOPE_H_
