#include "balancer/control/control_client.h"

#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "balancer/control/control_socket.h"

namespace numavm {

absl::StatusOr<PeerReport> ParsePeerReport(const std::string& reply) {
  const nlohmann::json j = nlohmann::json::parse(reply, nullptr, false);
  auto bad = [](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("not a numavm report: ", why));
  };
  if (j.is_discarded()) return bad("not JSON");
  if (!j.is_object()) return bad("not a JSON object");
  PeerReport out;
  if (j.contains("process")) {
    if (!j["process"].is_string()) return bad("\"process\" is not a string");
    out.process = j["process"].get<std::string>();
  }
  if (j.contains("pid")) {
    if (!j["pid"].is_number_integer() || j["pid"].get<int64_t>() <= 0 ||
        j["pid"].get<int64_t>() > INT32_MAX) {
      return bad("\"pid\" is not a process id");
    }
    out.pid = j["pid"].get<int>();
  }
  if (!j.contains("vms") || !j["vms"].is_array()) return bad("no \"vms\" array");
  for (const nlohmann::json& v : j["vms"]) {
    absl::StatusOr<VmReport> r = VmReportFromJson(v);
    if (r.ok()) {
      out.vms.push_back(*std::move(r));
    } else {
      out.problems.push_back(std::string(r.status().message()));
    }
  }
  return out;
}

absl::StatusOr<PeerReport> RequestReport(const std::string& socket) {
  absl::StatusOr<std::string> reply = ControlRequest(socket, "report");
  if (!reply.ok()) return reply.status();
  return ParsePeerReport(*reply);
}

absl::Status RequestDetach(const std::string& socket, const std::string& name) {
  absl::StatusOr<std::string> reply = ControlRequest(socket, absl::StrCat("detach ", name));
  if (!reply.ok()) return reply.status();
  if (*reply == "ok") return absl::OkStatus();
  absl::string_view text = *reply;
  if (absl::ConsumePrefix(&text, "error: ")) return absl::FailedPreconditionError(text);
  return absl::InvalidArgumentError(
      absl::StrCat("unexpected reply '", text.substr(0, 80), "' (want ok or error: ...)"));
}

}  // namespace numavm
