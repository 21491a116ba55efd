// Every subcommand's options, registered on numavm's CLI::App (the shared
// ones through cli/shared_flags.h). main.cc parses and dispatches.
#ifndef NUMAVM_CLI_COMMAND_LINE_H_
#define NUMAVM_CLI_COMMAND_LINE_H_

#include <CLI/CLI.hpp>

#include "cli/libvirt_commands.h"
#include "cli/plot_command.h"
#include "cli/replay_command.h"
#include "cli/run_command.h"
#include "cli/simulate_command.h"

namespace numavm {

void AddRunCommand(CLI::App& app, RunFlags& flags);
void AddReplayCommand(CLI::App& app, ReplayFlags& flags);
void AddSimulateCommand(CLI::App& app, SimulateFlags& flags);
void AddAttachCommands(CLI::App& app, AttachFlags& attach, DetachFlags& detach);
void AddDaemonCommand(CLI::App& app, DaemonFlags& flags);
void AddReportCommand(CLI::App& app, ReportFlags& flags);
void AddPlotCommand(CLI::App& app, PlotFlags& flags);

}  // namespace numavm

#endif  // NUMAVM_CLI_COMMAND_LINE_H_
