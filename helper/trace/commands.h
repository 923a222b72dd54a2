// `xref trace`'s CLI edges: each adds its subcommand and options and, when
// parsed, runs it and stores the exit status in `exit_status`.
#pragma once

#include <CLI/CLI.hpp>

namespace xref {

void setup_trace(CLI::App& app, int& exit_status);  // cmd_trace.cpp
// The offline subcommands, under `trace` (saved/cmd_trace_NAME.cpp).
CLI::App* setup_trace_export(CLI::App& trace, int& exit_status);
CLI::App* setup_trace_diff(CLI::App& trace, int& exit_status);
CLI::App* setup_trace_show(CLI::App& trace, int& exit_status);

}  // namespace xref
