#include "cli/shared_flags.h"

namespace numavm {

CLI::Option* OneOf(CLI::Option* option, const std::vector<std::string>& names);

namespace {

template <typename T>
void AddReport(CLI::App* app, T* format, const std::string& what) {
  OneOf(app->add_option("--report", *format, what + ": table (default) or json"),
        {"table", "json"});
  // Runs after --report's own callback (callbacks run in the order the
  // options were added), so "--json" wins over "--report table".
  app->add_flag_callback(
      "--json", [format] { *format = std::string("json"); }, "the same as --report json");
}

template <typename T>
CLI::Option* AddBalance(CLI::App* app, T* mode, const std::string& help) {
  return OneOf(app->add_option("--balance", *mode, help), {"off", "advise", "on"});
}

}  // namespace

CLI::Option* OneOf(CLI::Option* option, const std::vector<std::string>& names) {
  std::string listed, said;
  for (size_t i = 0; i < names.size(); ++i) {
    listed += (i == 0 ? "" : "|") + names[i];
    said += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  }
  // The same words as every other bad value: "--x: 'v': want a, b or c".
  const CLI::Validator member(
      [names, said](std::string& value) {
        for (const std::string& n : names) {
          if (value == n) return std::string();
        }
        return "'" + value + "': want " + said;
      },
      "");
  return option->check(member)->type_name(listed);
}

void AddReportFlags(CLI::App* app, std::string* format, const std::string& what) {
  AddReport(app, format, what);
}
void AddReportFlags(CLI::App* app, std::optional<std::string>* format, const std::string& what) {
  AddReport(app, format, what);
}
CLI::Option* AddBalanceFlag(CLI::App* app, std::string* mode, const std::string& help) {
  return AddBalance(app, mode, help);
}
CLI::Option* AddBalanceFlag(CLI::App* app, std::optional<std::string>* mode,
                            const std::string& help) {
  return AddBalance(app, mode, help);
}

}  // namespace numavm
