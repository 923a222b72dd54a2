#include "json_lines.h"

namespace xref::lldb_plugin {

void LineSplitter::append(std::string_view bytes, std::vector<std::string>& lines) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (!skipping_) {
      if (pending_.size() + piece.size() > max_line_bytes_) {
        pending_.clear();
        skipping_ = true;
        ++oversized_lines_;
      } else {
        pending_.append(piece);
      }
    }
    if (newline == std::string_view::npos) return;
    if (!skipping_) lines.push_back(std::move(pending_));
    pending_.clear();
    skipping_ = false;
    bytes.remove_prefix(newline + 1);
  }
}

}  // namespace xref::lldb_plugin
