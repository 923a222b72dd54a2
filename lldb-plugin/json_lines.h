// Line framing of the helper protocol (docs/protocol.md): one JSON object
// per '\n'-terminated line, no line longer than 1 MiB.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace xref::lldb_plugin {

inline constexpr size_t kMaxLineBytes = 1u << 20;

// Splits a byte stream into lines. A line longer than the bound is dropped
// whole (up to its newline) and counted, never returned in pieces.
class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line_bytes = kMaxLineBytes) : max_line_bytes_(max_line_bytes) {}

  // Appends `bytes` and moves every line completed by them into `lines`.
  void append(std::string_view bytes, std::vector<std::string>& lines);

  // The unterminated rest at end of stream, if any (not counted as a line).
  const std::string& pending() const { return pending_; }
  size_t oversized_lines() const { return oversized_lines_; }

 private:
  size_t max_line_bytes_;
  std::string pending_;
  bool skipping_ = false;  // inside an oversized line, until its newline
  size_t oversized_lines_ = 0;
};

}  // namespace xref::lldb_plugin
