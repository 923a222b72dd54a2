// Line framing of the helper protocol (docs/protocol.md): one JSON object
// per '\n'-terminated line, no line longer than 1 MiB. One splitter for
// both ends: the helper reads requests with it (`xref serve`), the LLDB
// plugin the helper's answers.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

namespace xref {

constexpr size_t kMaxLineBytes = size_t{1} << 20;

// Splits a byte stream into lines. A line longer than the limit is reported
// once as too_large, as soon as the limit is passed, and the rest of it is
// skipped without being buffered.
class LineSplitter {
 public:
  struct Line {
    std::string text;  // without the '\n'
    bool too_large = false;
  };

  explicit LineSplitter(size_t max_line_bytes = kMaxLineBytes) : max_line_bytes_(max_line_bytes) {}

  void feed(std::string_view bytes);
  // At end of input: the last line if it had no '\n'.
  void finish();
  std::optional<Line> next();

 private:
  size_t max_line_bytes_;
  std::string partial_;
  bool skipping_ = false;
  std::deque<Line> ready_;
};

}  // namespace xref
