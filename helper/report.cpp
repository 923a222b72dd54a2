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

int report_json_streamed(Envelope& envelope, const std::string& list_key,
                         const std::function<void(const EmitElement&)>& fill) {
  std::ostream& out = std::cout;
  // As dump() writes it: keys in sorted order, "data" first of the envelope's.
  out << "{\"data\":{";
  const char* separator = "";
  bool listed = false;
  auto write_list = [&] {
    out << separator << nlohmann::json(list_key).dump() << ":[";
    const char* comma = "";
    fill([&](const nlohmann::json& element) {
      out << comma << element.dump();
      comma = ",";
    });
    out << ']';
    separator = ",";
    listed = true;
  };
  for (const auto& [key, value] : envelope.data.items()) {
    if (!listed && list_key < key) write_list();
    out << separator << nlohmann::json(key).dump() << ':' << value.dump();
    separator = ",";
  }
  if (!listed) write_list();
  nlohmann::json rest = envelope_json(envelope);
  rest.erase("data");
  out << "}," << rest.dump().substr(1) << std::endl;
  return envelope.error ? error_exit_status(envelope.error->code) : 0;
}

}  // namespace xref
