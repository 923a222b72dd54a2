#include "parse_error_render.h"

#include <algorithm>

#include "hex.h"

namespace xref {
namespace {

bool is_control(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x20 || byte == 0x7f;
}

bool is_printable(char c) { return !is_control(c) && static_cast<unsigned char>(c) < 0x80; }

std::string two_hex_digits(char c) {
  const std::string hex = to_hex(static_cast<unsigned char>(c)).substr(2);
  return hex.size() == 1 ? "0" + hex : hex;
}

// A UTF-8 continuation byte shares a terminal cell with the bytes before it.
bool is_utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xc0) == 0x80; }

}  // namespace

std::string render_parse_error(std::string_view subject, std::string_view text,
                               const Error& error) {
  std::string rendered = std::string(subject) + ": " + error.message;
  if (error.column <= 0) return rendered;
  rendered += " (column " + std::to_string(error.column) + ")";

  // Tabs stay tabs in both lines so the caret lines up whatever the tab
  // width; other control characters (a stray newline) would break the
  // layout, so they show as spaces.
  std::string echo;
  for (char c : text) echo += (c != '\t' && is_control(c)) ? ' ' : c;

  const size_t caret_index = std::min(static_cast<size_t>(error.column - 1), text.size());
  std::string padding;
  for (size_t i = 0; i < caret_index; ++i) {
    if (text[i] == '\t') {
      padding += '\t';
    } else if (!is_utf8_continuation(text[i])) {
      padding += ' ';
    }
  }
  rendered += "\n  " + echo + "\n  " + padding + "^";
  return rendered;
}

std::string quoted_character(char c) {
  if (!is_printable(c)) return "byte 0x" + two_hex_digits(c);
  return std::string("'") + c + "'";
}

std::string quoted_text(std::string_view text) {
  std::string quoted = "\"";
  for (char c : text) quoted += is_printable(c) ? std::string(1, c) : "\\x" + two_hex_digits(c);
  return quoted + "\"";
}

}  // namespace xref
