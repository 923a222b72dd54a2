#include "json_lines.h"

namespace xref {

void LineSplitter::feed(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t newline = bytes.find('\n');
    const std::string_view piece = bytes.substr(0, newline);
    if (skipping_) {
      // Already reported: drop the rest of the oversized line.
      if (newline == std::string_view::npos) return;
      skipping_ = false;
    } else if (partial_.size() + piece.size() > max_line_bytes_) {
      // Report the moment the limit is passed; never buffer past it.
      partial_.clear();
      ready_.push_back({{}, true});
      skipping_ = newline == std::string_view::npos;
      if (skipping_) return;
    } else {
      partial_.append(piece);
      if (newline == std::string_view::npos) return;
      ready_.push_back({std::move(partial_), false});
      partial_.clear();
    }
    bytes.remove_prefix(newline + 1);
  }
}

void LineSplitter::finish() {
  if (!partial_.empty()) ready_.push_back({std::move(partial_), false});
  partial_.clear();
  skipping_ = false;
}

std::optional<LineSplitter::Line> LineSplitter::next() {
  if (ready_.empty()) return std::nullopt;
  Line line = std::move(ready_.front());
  ready_.pop_front();
  return line;
}

}  // namespace xref
