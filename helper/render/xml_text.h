// Text and attribute values inside an XML document (the flame graph SVG):
// markup characters escaped, and what XML 1.0 cannot hold (control
// characters, bytes that are not UTF-8, as symbol names may contain)
// replaced by U+FFFD, so the document always parses.
#pragma once

#include <string>
#include <string_view>

namespace xref::render {

void append_xml_text(std::string& out, std::string_view text);

}  // namespace xref::render
