#include "process_command.h"

#include "report.h"

namespace xref {

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
