// The `trace` subcommand's options, defined once with CLI11 and used by both
// the headless CLI (cmd_trace.cpp runs them) and `xref serve` (which parses
// a front end's words with the same definitions and starts a session).
#pragma once

#include <CLI/CLI.hpp>

#include "command/process_command.h"
#include "result.h"
#include "trace/request.h"

namespace xref {

struct TraceCommandOptions : ProcessCommandOptions {
  TraceRequest request;
  bool jsonl = false;
  bool addresses = false;  // --addresses: static VAs on each text line
  bool no_status = false;  // --no-status/--quiet: no status line on a terminal
};

// Adds the trace options to `command` (the `trace` subcommand, or serve's
// parser for a session.start), bound to `options`.
void add_trace_options(CLI::App& command, TraceCommandOptions& options);

// Checks what CLI11 cannot: bounds, exclusive modes, the backend name, and
// the options that only a debugger front end can fill in.
Result<void> validate_trace_request(const TraceRequest& request);

// Runs the trace in the foreground and prints it (text, --json or --jsonl);
// returns the exit status.
int run_trace_command(const TraceCommandOptions& options);

}  // namespace xref
