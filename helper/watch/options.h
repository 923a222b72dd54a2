// The `watch` subcommand's options, defined once with CLI11 (cmd_watch.cpp
// runs them; `xref serve` will parse a front end's words with the same).
#pragma once

#include <CLI/CLI.hpp>

#include "command/process_command.h"
#include "result.h"
#include "watch/request.h"

namespace xref {

struct WatchCommandOptions : ProcessCommandOptions {
  WatchRequest request;
  bool jsonl = false;  // each record as a JSON line as it comes, then the document as one line
};

void add_watch_options(CLI::App& command, WatchCommandOptions& options);

// What CLI11 cannot check, and what this version does not do yet.
Result<void> validate_watch_request(const WatchRequest& request);

}  // namespace xref
