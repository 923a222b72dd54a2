// Text in columns: padding by display width, so "→" and "…" (three bytes,
// one column) line up with ASCII. Longer text is kept whole.
#pragma once

#include <cstddef>
#include <string>

namespace xref::render {

// Columns `text` takes on a terminal: UTF-8 continuation bytes take none.
size_t display_width(const std::string& text);
// `text` then spaces up to `width` columns.
std::string pad_right(const std::string& text, size_t width);
// Spaces then `text`, right-aligned in `width` columns.
std::string pad_left(const std::string& text, size_t width);

}  // namespace xref::render
