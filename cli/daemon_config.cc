#include "cli/daemon_config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/size.h"
#include "base/toml.h"
#include "cli/run_options.h"
#include "cli/service_loop.h"

namespace numavm {
namespace {

absl::Status Bad(absl::string_view source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

absl::Status SetInterval(absl::string_view text, DaemonConfig& c) {
  absl::StatusOr<absl::Duration> d = ParseTimeout(text);
  if (!d.ok() || *d < absl::Milliseconds(100)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': want e.g. 5s, at least 100ms"));
  }
  c.interval = *d;
  return absl::OkStatus();
}

absl::Status SetRate(absl::string_view name, absl::string_view text, DaemonConfig& c) {
  absl::StatusOr<uint64_t> r = ParseMigrateRate(name, text);
  if (!r.ok()) return r.status();
  c.migrate_bytes_per_second = *r;
  return absl::OkStatus();
}

bool IsNumericAddress(const std::string& text) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, text.c_str(), buffer) == 1;
}

absl::Status SetPort(int64_t port, DaemonConfig& c) {
  if (port < 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("port ", port, " is not 0-65535"));
  c.metrics_port = static_cast<int>(port);
  return absl::OkStatus();
}

}  // namespace

absl::Status ApplyDaemonToml(absl::string_view text, absl::string_view source, DaemonConfig& c) {
  absl::StatusOr<toml::table> t = ParseToml(text, source);
  if (!t.ok()) return t.status();
  if (absl::Status s = CheckTomlKeys(*t, {"daemon", "metrics"}, "the top level", source); !s.ok())
    return s;
  absl::StatusOr<const toml::table*> daemon = TomlTable(*t, "daemon", source);
  if (!daemon.ok()) return daemon.status();
  absl::StatusOr<const toml::table*> metrics = TomlTable(*t, "metrics", source);
  if (!metrics.ok()) return metrics.status();
  if (const toml::table* d = *daemon) {
    if (absl::Status s = CheckTomlKeys(*d,
                                       {"connect", "balance", "mode", "interval", "migrate_rate",
                                        "domains", "override_pinning"},
                                       "[daemon]", source);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::optional<std::string>> connect =
        TomlString(*d, "connect", "daemon.connect", source);
    if (!connect.ok()) return connect.status();
    if (*connect) c.connect = **connect;
    if (d->get("balance") != nullptr && d->get("mode") != nullptr) {
      return Bad(source,
                 "daemon.balance and daemon.mode (its old name) are both set; keep balance");
    }
    for (const char* key : {"balance", "mode"}) {
      const toml::node* n = d->get(key);
      if (n == nullptr) continue;
      auto v = n->value<std::string>();
      if (!v)
        return Bad(source, absl::StrCat("daemon.", key, " must be \"off\", \"advise\" or \"on\""));
      absl::StatusOr<BalanceMode> m = ParseDomainBalance(*v);
      if (!m.ok()) return Bad(source, absl::StrCat("daemon.", key, ": ", m.status().message()));
      c.mode = *m;
    }
    if (const toml::node* n = d->get("interval")) {
      auto v = n->value<std::string>();
      if (!v) return Bad(source, "daemon.interval must be a duration string such as \"5s\"");
      if (absl::Status s = SetInterval(*v, c); !s.ok())
        return Bad(source, absl::StrCat("daemon.interval: ", s.message()));
    }
    if (const toml::node* n = d->get("migrate_rate")) {
      auto v = n->value<std::string>();
      if (!v) return Bad(source, "daemon.migrate_rate must be a size string such as \"64M\"");
      if (absl::Status s = SetRate("daemon.migrate_rate", *v, c); !s.ok())
        return Bad(source, s.message());
    }
    if (const toml::node* n = d->get("override_pinning")) {
      std::optional<bool> v = n->value<bool>();
      if (!v || !n->is_boolean()) {
        return TomlError(*n, "daemon.override_pinning must be true or false", source);
      }
      c.override_pinning = *v;
    }
    if (const toml::node* n = d->get("domains")) {
      const toml::array* a = n->as_array();
      if (a == nullptr) return Bad(source, "daemon.domains must be a list of names");
      c.domains.clear();
      for (const toml::node& e : *a) {
        auto v = e.value<std::string>();
        if (!v) return Bad(source, "daemon.domains must be a list of names");
        c.domains.push_back(*v);
      }
    }
  }
  if (const toml::table* m = *metrics) {
    if (absl::Status s = CheckTomlKeys(*m, {"address", "port"}, "[metrics]", source); !s.ok())
      return s;
    absl::StatusOr<std::optional<std::string>> address =
        TomlString(*m, "address", "metrics.address", source);
    if (!address.ok()) return address.status();
    if (*address) c.metrics_address = **address;
    absl::StatusOr<std::optional<int64_t>> port =
        TomlInt(*m, "port", 0, 65535, "metrics.port", source);
    if (!port.ok()) return port.status();
    if (*port) c.metrics_port = static_cast<int>(**port);
  }
  return absl::OkStatus();
}

absl::StatusOr<DaemonConfig> ResolveDaemonConfig(const DaemonFlags& flags) {
  DaemonConfig c;
  if (!flags.config_path.empty()) {
    absl::StatusOr<std::string> text = ReadRegularFile(flags.config_path, "config");
    if (!text.ok()) return text.status();
    if (absl::Status s = ApplyDaemonToml(*text, flags.config_path, c); !s.ok()) return s;
  }
  if (!flags.connect.empty()) c.connect = flags.connect;
  if (flags.override_pinning) c.override_pinning = true;
  if (!flags.balance.empty()) {
    absl::StatusOr<BalanceMode> m = ParseDomainBalance(flags.balance);
    if (!m.ok())
      return absl::InvalidArgumentError(absl::StrCat("--balance: ", m.status().message()));
    c.mode = *m;
  }
  if (!flags.interval.empty()) {
    if (absl::Status s = SetInterval(flags.interval, c); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--interval: ", s.message()));
    }
  }
  if (!flags.migrate_rate.empty()) {
    if (absl::Status s = SetRate("--migrate-rate", flags.migrate_rate, c); !s.ok()) return s;
  }
  if (!flags.domains.empty()) c.domains = flags.domains;
  if (!flags.metrics_address.empty()) c.metrics_address = flags.metrics_address;
  if (flags.metrics_port) {
    if (absl::Status s = SetPort(*flags.metrics_port, c); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--metrics-port: ", s.message()));
    }
  }
  if (!IsNumericAddress(c.metrics_address)) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics address '", c.metrics_address,
                     "' is not an IPv4 or IPv6 address (e.g. 127.0.0.1, ::1, 0.0.0.0)"));
  }
  return c;
}

}  // namespace numavm
