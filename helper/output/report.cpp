#include "output/report.h"

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
    std::cout << json_text(envelope_json(envelope)) << std::endl;
  } else {
    if (text) text(std::cout);
    std::cout.flush();
    for (const auto& warning : envelope.warnings) std::cerr << "xref: warning: " << warning << '\n';
    if (envelope.error) std::cerr << error_line(*envelope.error) << std::endl;
  }
  return envelope.error ? error_exit_status(envelope.error->code) : 0;
}

int report_json_streamed(Envelope& envelope, const std::string& list_key,
                         const std::function<void(const EmitElement&)>& fill) {
  std::ostream& out = std::cout;
  // As json_text() writes it: keys in sorted order, "data" first of the envelope's.
  out << "{\"data\":{";
  const char* separator = "";
  bool listed = false;
  auto write_list = [&] {
    out << separator << json_text(list_key) << ":[";
    const char* comma = "";
    fill([&](const nlohmann::json& element) {
      out << comma << json_text(element);
      comma = ",";
    });
    out << ']';
    separator = ",";
    listed = true;
  };
  for (const auto& [key, value] : envelope.data.items()) {
    if (!listed && list_key < key) write_list();
    out << separator << json_text(key) << ':' << json_text(value);
    separator = ",";
  }
  if (!listed) write_list();
  nlohmann::json rest = envelope_json(envelope);
  rest.erase("data");
  out << "}," << json_text(rest).substr(1) << std::endl;
  return envelope.error ? error_exit_status(envelope.error->code) : 0;
}

}  // namespace xref
