// The shape every process command shares: open the target (identity,
// address space, --bin check), run the body, re-check the identity at the
// end, and report. Commands only supply the body.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <ostream>
#include <string>

#include "output/json_envelope.h"
#include "process/target.h"

namespace xref {

// Options every process command shares: --pid, --bin/-b, --json.
struct ProcessCommandOptions {
  int pid = 0;
  std::string bin;
  bool json = false;
};
void add_process_options(CLI::App& command, ProcessCommandOptions& options);

using TextPrinter = std::function<void(std::ostream&)>;
// Fills envelope.data (and may set envelope.error); returns the text view.
using ProcessCommandBody = std::function<TextPrinter(Target& target, Envelope& envelope)>;

int run_process_command(const ProcessCommandOptions& options, Envelope envelope, const ProcessCommandBody& body);

// Reports an error found before the target was opened (bad arguments).
int report_early_error(const ProcessCommandOptions& options, Envelope envelope, Error error);

}  // namespace xref
