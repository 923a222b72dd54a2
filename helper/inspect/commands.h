// The inspect commands' CLI edges (cmd_NAME.cpp): each adds its subcommand
// and options to the app and, when parsed, runs it and stores the exit
// status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace xref {

void setup_maps(CLI::App& app, int& exit_status);
void setup_resolve(CLI::App& app, int& exit_status);
void setup_memscan(CLI::App& app, int& exit_status);

}  // namespace xref
