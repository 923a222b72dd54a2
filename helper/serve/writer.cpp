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

OutputQueue::KeyedPush ProtocolWriter::write_superseding(uint64_t key,
                                                        const std::function<nlohmann::json(bool)>& make) {
  // One producer per key: the unsent piece can only go (to the writer)
  // between the look and the push, so the second try settles it.
  for (;;) {
    const bool superseding = queue_.unsent(key);
    const auto pushed = queue_.push_keyed(key, line_of(make(superseding)), superseding);
    if (pushed != OutputQueue::KeyedPush::retry) return pushed;
  }
}

}  // namespace xref::serve
