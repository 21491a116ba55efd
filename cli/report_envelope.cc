#include "cli/report_envelope.h"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"

namespace numavm {

nlohmann::json WithReportEnvelope(absl::string_view command, nlohmann::json body, absl::Time now) {
  if (const char* epoch = std::getenv("SOURCE_DATE_EPOCH")) {
    int64_t seconds = 0;
    if (absl::SimpleAtoi(epoch, &seconds) && seconds >= 0) now = absl::FromUnixSeconds(seconds);
  }
  // nlohmann's object keeps keys sorted; the envelope's names sort first
  // only by accident, so readers must look them up by name (they do).
  nlohmann::json j = std::move(body);
  j["schema_version"] = kReportSchemaVersion;
  j["generated_at"] = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", now, absl::UTCTimeZone());
  j["command"] = std::string(command);
  j["numavm_version"] = kNumavmVersion;
  return j;
}

}  // namespace numavm
