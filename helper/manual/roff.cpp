#include "manual/roff.h"

#include <cstdint>
#include <cstdio>

namespace xref::manual {
namespace {

// The length of the UTF-8 sequence `lead` starts, and the bits it carries;
// 0 for a byte that cannot start one.
size_t sequence_length(unsigned char lead, uint32_t& bits) {
  if (lead >= 0xf0 && lead < 0xf8) return bits = lead & 0x07u, 4;
  if (lead >= 0xe0) return bits = lead & 0x0fu, 3;
  if (lead >= 0xc0) return bits = lead & 0x1fu, 2;
  return 0;
}

std::string code_point_escape(uint32_t code_point) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\[u%04X]", code_point);
  return buffer;
}

}  // namespace

std::string roff_text(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '-') {
      out += "\\-";
    } else if (c == '\\') {
      out += "\\(rs";
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      uint32_t code_point = 0;
      const size_t length = sequence_length(c, code_point);
      bool valid = length > 0 && i + length <= text.size();
      for (size_t k = 1; valid && k < length; ++k) {
        const unsigned char next = static_cast<unsigned char>(text[i + k]);
        valid = (next & 0xc0u) == 0x80u;
        code_point = (code_point << 6) | (next & 0x3fu);
      }
      if (!valid) {
        out += "\\[uFFFD]";  // as json_text shows invalid UTF-8
        continue;
      }
      out += code_point_escape(code_point);
      i += length - 1;
    }
  }
  return out;
}

std::string roff_bold(const std::string& text) { return "\\fB" + roff_text(text) + "\\fR"; }
std::string roff_italic(const std::string& text) { return "\\fI" + roff_text(text) + "\\fR"; }

}  // namespace xref::manual
