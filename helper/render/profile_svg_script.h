// What makes the flame graph SVG interactive, inline so the file needs no
// network: its style sheet and its script (zoom on click, reset, search
// with the matched share, the details line; `#zoom=ID` and
// `#search=TEXT` in the URL do the same when the file opens).
#pragma once

namespace xref::render {

extern const char* const kFlameGraphStyle;
extern const char* const kFlameGraphScript;  // contains no "]]>": it goes into a CDATA section

}  // namespace xref::render
