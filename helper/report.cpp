#include "report.h"

#include <iostream>

namespace xref {

std::string error_line(const Error& error) {
  std::string line = "xref: error: " + error.message;
  if (error.column > 0) line += " (column " + std::to_string(error.column) + ")";
  if (!error.hint.empty()) line += "; " + error.hint;
  return line;
}

int report(const OutputOptions& output, const Envelope& envelope,
           const std::function<void(std::ostream&)>& text) {
  if (output.json) {
    std::cout << envelope_json(envelope).dump() << std::endl;
  } else {
    if (text) text(std::cout);
    std::cout.flush();
    for (const auto& warning : envelope.warnings) std::cerr << "xref: warning: " << warning << '\n';
    if (envelope.error) std::cerr << error_line(*envelope.error) << std::endl;
  }
  return envelope.error ? error_exit_status(envelope.error->code) : 0;
}

}  // namespace xref
