#include "render/columns.h"

namespace xref::render {

size_t display_width(const std::string& text) {
  size_t columns = 0;
  for (unsigned char c : text) columns += (c & 0xc0) != 0x80;
  return columns;
}

std::string pad_right(const std::string& text, size_t width) {
  const size_t columns = display_width(text);
  return columns >= width ? text : text + std::string(width - columns, ' ');
}

std::string pad_left(const std::string& text, size_t width) {
  const size_t columns = display_width(text);
  return columns >= width ? text : std::string(width - columns, ' ') + text;
}

}  // namespace xref::render
