// numavm: a NUMA balancer for virtual machines.
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/command_line.h"
#include "cli/exit_codes.h"
#include "cli/libvirt_commands.h"
#include "cli/replay_command.h"
#include "cli/report_envelope.h"
#include "cli/run_command.h"
#include "cli/simulate_command.h"

namespace {

constexpr const char* kDescription =
    "numavm - a NUMA balancer for virtual machines.\n"
    "Runs guest workloads on its own KVM-based VMM and balances them (run,\n"
    "replay), balances running libvirt domains from outside (attach, detach,\n"
    "daemon), and reports every VM's locality (report).";

}  // namespace

int main(int argc, char** argv) {
  // A peer that goes away (libvirtd restarting, a metrics scraper or a
  // `numavm report` hanging up, a closed stdout pipe) must be an EPIPE
  // error where it happens, never a signal that kills numavm - and with
  // `numavm run`, its VM.
  std::signal(SIGPIPE, SIG_IGN);
  CLI::App app(kDescription, "numavm");
  app.set_version_flag("--version", std::string("numavm ") + numavm::kNumavmVersion);
  app.require_subcommand(1);
  app.footer("\nRun 'numavm COMMAND --help' for a command's options.");
  numavm::RunFlags run_flags;
  numavm::AddRunCommand(app, run_flags);
  numavm::ReplayFlags replay_flags;
  numavm::AddReplayCommand(app, replay_flags);
  numavm::SimulateFlags simulate_flags;
  numavm::AddSimulateCommand(app, simulate_flags);
  numavm::AttachFlags attach_flags;
  numavm::DetachFlags detach_flags;
  numavm::AddAttachCommands(app, attach_flags, detach_flags);
  numavm::DaemonFlags daemon_flags;
  numavm::AddDaemonCommand(app, daemon_flags);
  numavm::ReportFlags report_flags;
  numavm::AddReportCommand(app, report_flags);
  numavm::PlotFlags plot_flags;
  numavm::AddPlotCommand(app, plot_flags);
  std::string help_topic;
  CLI::App* help = app.add_subcommand("help", "Print the help of numavm or of one command");
  help->add_option("command", help_topic, "a command, e.g. run");
  // An option given an empty value ("--vcpus ''") is an error, never the
  // default it would silently fall back to.
  const CLI::Validator non_empty(
      [](std::string& v) { return v.empty() ? std::string("an empty value") : std::string(); }, "");
  for (CLI::App* sub : app.get_subcommands({})) {
    for (CLI::Option* o : sub->get_options()) {
      if (o->get_expected_min() > 0 && !o->get_positional()) o->check(non_empty);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "numavm: %s (see 'numavm --help')\n", e.what());
    return numavm::kExitBadInput;
  }
  if (app.got_subcommand("help")) {
    if (help_topic.empty()) {
      // app.help() would describe the selected subcommand, "help" itself.
      std::cout << app.get_formatter()->make_help(&app, "numavm", CLI::AppFormatMode::Normal);
      return numavm::kExitOk;
    }
    for (CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == help_topic && sub != help) {
        std::cout << sub->help("numavm");
        return numavm::kExitOk;
      }
    }
    std::fprintf(stderr, "numavm help: no command '%s' (see 'numavm --help')\n",
                 help_topic.c_str());
    return numavm::kExitBadInput;
  }
  if (app.got_subcommand("run")) return numavm::RunCommand(run_flags);
  if (app.got_subcommand("replay")) return numavm::ReplayCommand(replay_flags);
  if (app.got_subcommand("simulate")) return numavm::SimulateCommand(simulate_flags);
  if (app.got_subcommand("attach")) return numavm::AttachCommand(attach_flags);
  if (app.got_subcommand("detach")) return numavm::DetachCommand(detach_flags);
  if (app.got_subcommand("daemon")) return numavm::DaemonCommand(daemon_flags);
  if (app.got_subcommand("report")) return numavm::ReportCommand(report_flags);
  if (app.got_subcommand("plot")) return numavm::PlotCommand(plot_flags);
  return numavm::kExitBadInput;
}
