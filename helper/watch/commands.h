// `xref watch`'s CLI edge (cmd_watch.cpp): adds the subcommand and, when
// parsed, runs it and stores the exit status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace xref {

void setup_watch(CLI::App& app, int& exit_status);

}  // namespace xref
