// The options every subcommand that has them spells and means alike
// (issue: one CLI vocabulary): --report table|json with --json as its
// alias, --balance off|advise|on, --duration, --migrate-rate, and the
// type names help prints (SIZE, DURATION, N, FILE). Each is added here
// only, so two subcommands cannot drift apart.
#ifndef NUMAVM_CLI_SHARED_FLAGS_H_
#define NUMAVM_CLI_SHARED_FLAGS_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace numavm {

inline constexpr const char* kSizeType = "SIZE";          // 512M, 4G, 1T, bytes
inline constexpr const char* kDurationType = "DURATION";  // 30s, 5m, 1h30m, 500ms, seconds

// Restricts `option` to `names`, listed in help as "a|b|c".
CLI::Option* OneOf(CLI::Option* option, const std::vector<std::string>& names);

// --report table|json and --json (the same as --report json).
void AddReportFlags(CLI::App* app, std::string* format, const std::string& what);
void AddReportFlags(CLI::App* app, std::optional<std::string>* format, const std::string& what);

// --balance off|advise|on; `help` says what each does here and which is
// the default.
CLI::Option* AddBalanceFlag(CLI::App* app, std::string* mode, const std::string& help);
CLI::Option* AddBalanceFlag(CLI::App* app, std::optional<std::string>* mode,
                            const std::string& help);

// --duration DURATION; `aliases` are older names still taken ("--timeout").
template <typename T>
CLI::Option* AddDurationFlag(CLI::App* app, T* value, const std::string& help,
                             const std::string& aliases = "") {
  return app->add_option("--duration" + (aliases.empty() ? "" : "," + aliases), *value, help)
      ->type_name(kDurationType);
}

template <typename T>
CLI::Option* AddSizeOption(CLI::App* app, const std::string& name, T* value,
                           const std::string& help) {
  return app->add_option(name, *value, help)->type_name(kSizeType);
}

template <typename T>
CLI::Option* AddDurationOption(CLI::App* app, const std::string& name, T* value,
                               const std::string& help) {
  return app->add_option(name, *value, help)->type_name(kDurationType);
}

}  // namespace numavm

#endif  // NUMAVM_CLI_SHARED_FLAGS_H_
