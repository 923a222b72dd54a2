#include "serve/writer.h"

#include <string>

namespace xref::serve {
namespace {

std::string line_of(const nlohmann::json& message) {
  // A target's strings (symbols, paths) need not be UTF-8: replace, never throw.
  std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  return line;
}

}  // namespace

bool ProtocolWriter::write(const nlohmann::json& message) { return queue_.push(line_of(message), false); }

bool ProtocolWriter::write_droppable(const nlohmann::json& message) {
  return queue_.push(line_of(message), true);
}

}  // namespace xref::serve
