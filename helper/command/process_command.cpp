#include "command/process_command.h"

#include <string>

#include "command/option_values.h"
#include "output/report.h"

namespace xref {

void add_process_options(CLI::App& command, ProcessCommandOptions& options) {
  command.add_option("--pid,-p", options.pid, "target process ID")
      ->type_name("PID")
      ->required()
      ->transform(number_in({1, kMaxPid, "give the target's process ID (1 to " + std::to_string(kMaxPid) +
                                             "), e.g. from `pgrep NAME`"}));
  command.add_option("--bin,-b", options.bin,
                     "the target's executable; verified against the process (build-id and SHA-256)")
      ->type_name("FILE");
  command.add_flag("--json", options.json, "print one JSON document (docs/json.md)");
}

int report_early_error(const ProcessCommandOptions& options, Envelope envelope, Error error) {
  envelope.error = std::move(error);
  return report({options.json}, envelope, nullptr);
}

int run_process_command(const ProcessCommandOptions& options, Envelope envelope, const ProcessCommandBody& body) {
  auto target = open_target({options.pid, options.bin});
  if (!target) return report_early_error(options, std::move(envelope), target.error());
  envelope.process = process_json(target->process.identity(), target->binary_match);
  envelope.warnings.insert(envelope.warnings.end(), target->warnings.begin(), target->warnings.end());
  TextPrinter text = body(*target, envelope);
  // Identity first: data from a process that changed underneath must not
  // be attributed to the image it was read against.
  if (auto still = target->process.recheck(); !still) envelope.error = still.error();
  return report({options.json}, envelope, text);
}

}  // namespace xref
