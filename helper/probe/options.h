// The `probe` subcommand's options, defined once with CLI11 and used by both
// the headless CLI (cmd_probe.cpp runs them) and `xref serve` (which parses
// a front end's words with the same definitions and starts a session).
#pragma once

#include <CLI/CLI.hpp>

#include "command/process_command.h"
#include "probe/request.h"
#include "result.h"

namespace xref {

struct ProbeCommandOptions : ProcessCommandOptions {
  ProbeRequest request;
  bool count = false;  // --count: hits are always counted
  bool jsonl = false;  // heartbeats as JSON lines, then the document as one line
  bool no_status = false;  // --no-status/--quiet: no status line on a terminal
};

// Adds the probe options to `command`, bound to `options`.
void add_probe_options(CLI::App& command, ProbeCommandOptions& options);

// Checks what CLI11 cannot: the backend name, --every, the mark options.
Result<void> validate_probe_request(const ProbeRequest& request);

}  // namespace xref
