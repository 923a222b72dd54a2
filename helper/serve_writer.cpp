#include "serve_writer.h"

#include <unistd.h>

#include <cerrno>
#include <string>

namespace xref::serve {

bool ProtocolWriter::write(const nlohmann::json& message) {
  // A target's strings (symbols, paths) need not be UTF-8: replace, never throw.
  std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  line += '\n';
  std::lock_guard lock(mutex_);
  if (broken_) return false;
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t count = ::write(fd_, line.data() + written, line.size() - written);
    if (count < 0 && errno == EINTR) continue;
    if (count <= 0) {
      broken_ = true;
      return false;
    }
    written += static_cast<size_t>(count);
  }
  return true;
}

}  // namespace xref::serve
