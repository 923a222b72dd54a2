// Text made safe for roff (the man(7) macros): a hyphen is \- (what a user
// copies from a page is then the ASCII '-' the option needs), a backslash
// \(rs, a line may not start with '.' or '\'' (it would be a request), and
// non-ASCII characters become \[uXXXX], so groff needs no input encoding.
#pragma once

#include <string>

namespace xref::manual {

// Running text, any number of lines.
std::string roff_text(const std::string& text);

// Bold or italic text for inside a line: \fB...\fR, \fI...\fR.
std::string roff_bold(const std::string& text);
std::string roff_italic(const std::string& text);

}  // namespace xref::manual
