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

void ProtocolWriter::transform_response(const nlohmann::json& id, Transform transform) {
  std::lock_guard lock(transforms_mutex_);
  transforms_[id.dump()] = std::move(transform);
}

nlohmann::json ProtocolWriter::routed(const nlohmann::json& message) {
  if (sink_ && message.value("type", "") == "event" && sink_(message)) return nullptr;
  const auto id = message.find("id");
  if (id == message.end() || id->is_null()) return message;
  Transform transform;
  {
    std::lock_guard lock(transforms_mutex_);
    const auto found = transforms_.find(id->dump());
    if (found == transforms_.end()) return message;
    transform = std::move(found->second);
    transforms_.erase(found);
  }
  return transform(message);
}

bool ProtocolWriter::write(const nlohmann::json& message) {
  const nlohmann::json out = routed(message);
  if (out.is_null()) return !queue_.broken();
  return queue_.push(line_of(out), false);
}

bool ProtocolWriter::write_droppable(const nlohmann::json& message) {
  const nlohmann::json out = routed(message);
  if (out.is_null()) return true;
  return queue_.push(line_of(out), true);
}

bool ProtocolWriter::write_droppable_line(std::string line) {
  if (sink_) {
    // A window event written straight as a line: the display reads it back.
    const nlohmann::json event = nlohmann::json::parse(line, nullptr, false);
    if (!event.is_discarded() && sink_(event)) return true;
  }
  return queue_.push(std::move(line), true);
}

OutputQueue::KeyedPush ProtocolWriter::write_superseding(uint64_t key,
                                                        const std::function<nlohmann::json(bool)>& make) {
  // One producer per key: the unsent piece can only go (to the writer)
  // between the look and the push, so the second try settles it.
  if (sink_ && sink_(make(false))) return OutputQueue::KeyedPush::queued;
  for (;;) {
    const bool superseding = queue_.unsent(key);
    const auto pushed = queue_.push_keyed(key, line_of(make(superseding)), superseding);
    if (pushed != OutputQueue::KeyedPush::retry) return pushed;
  }
}

}  // namespace xref::serve
