#include "cli/service_loop.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace numavm {

absl::StatusOr<BalanceMode> ParseDomainBalance(absl::string_view text) {
  if (text == "enforce") return BalanceMode::kOn;
  return ParseBalanceMode(text);
}

SignalWaiter::SignalWaiter() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  sigaddset(&set_, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set_, &old_);
}

SignalWaiter::~SignalWaiter() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }

int SignalWaiter::Wait(absl::Duration timeout) {
  timespec ts = absl::ToTimespec(std::max(timeout, absl::ZeroDuration()));
  for (;;) {
    int sig = sigtimedwait(&set_, nullptr, &ts);
    if (sig > 0) return sig;
    if (errno == EINTR) continue;
    return 0;
  }
}

std::string HandleControlRequest(DomainManager& manager, const std::string& process,
                                 const std::string& request, std::atomic<bool>* detached_all) {
  absl::string_view r = absl::StripAsciiWhitespace(request);
  if (r == "report") {
    nlohmann::json j = {{"process", process}, {"pid", getpid()}, {"vms", nlohmann::json::array()}};
    for (const VmReport& v : manager.Reports()) j["vms"].push_back(ToJson(v));
    return j.dump();
  }
  if (absl::ConsumePrefix(&r, "detach ")) {
    r = absl::StripAsciiWhitespace(r);
    if (r == "--all") {
      manager.DetachAll();
      if (detached_all != nullptr) *detached_all = true;
      return "ok";
    }
    absl::Status s = manager.Detach(std::string(r));
    return s.ok() ? "ok" : absl::StrCat("error: ", s.message());
  }
  return absl::StrCat("error: unknown request '", r, "' (want report, detach NAME, detach --all)");
}

Topology HostTopologyOrOneNode(const char* who) {
  absl::StatusOr<Topology> t = ReadHostTopology();
  if (t.ok()) return *t;
  std::fprintf(stderr, "%s: %s; treating the host as one node\n", who,
               std::string(t.status().message()).c_str());
  Topology one{{NumaNode{0, {}, 0, 0}}, {{10}}};
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < cpus; ++c) one.nodes[0].cpus.push_back(static_cast<int>(c));
  return one;
}

}  // namespace numavm
