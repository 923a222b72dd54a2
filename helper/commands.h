// One setup function per subcommand (cmd_NAME.cpp): it adds the subcommand
// and its options to the app and, when parsed, runs it and stores the exit
// status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace xref {

void setup_maps(CLI::App& app, int& exit_status);
void setup_resolve(CLI::App& app, int& exit_status);
void setup_memscan(CLI::App& app, int& exit_status);
void setup_doctor(CLI::App& app, int& exit_status);
void setup_trace(CLI::App& app, int& exit_status);
// `trace export`: offline, under `trace` (cmd_trace_export.cpp).
CLI::App* setup_trace_export(CLI::App& trace, int& exit_status);
// `trace diff`: offline, under `trace` (cmd_trace_diff.cpp).
CLI::App* setup_trace_diff(CLI::App& trace, int& exit_status);
// `trace show`: offline, under `trace` (cmd_trace_show.cpp).
CLI::App* setup_trace_show(CLI::App& trace, int& exit_status);

// maps, resolve, memscan, doctor: the commands that answer once (the CLI's
// and xref serve's `command` method alike).
inline void setup_one_shot_commands(CLI::App& app, int& exit_status) {
  setup_maps(app, exit_status);
  setup_resolve(app, exit_status);
  setup_memscan(app, exit_status);
  setup_doctor(app, exit_status);
}
void setup_serve(CLI::App& app, int& exit_status);

// Options every process command shares: --pid, --bin/-b, --json.
struct ProcessCommandOptions {
  int pid = 0;
  std::string bin;
  bool json = false;
};
void add_process_options(CLI::App& command, ProcessCommandOptions& options);

}  // namespace xref
