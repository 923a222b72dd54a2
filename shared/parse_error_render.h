// Shows a parse Error to a person: the message with its column, then the
// parsed text with a caret under the offending character. Shared by every
// parser whose errors carry Error::column (fetch specs, filters).
#pragma once

#include <string>
#include <string_view>

#include "result.h"

namespace xref {

// For error.column > 0 returns three lines (no trailing newline):
//   fetch spec: unknown register '%q8' (column 8)
//     amount=%q8:u64
//            ^
// `subject` names what was parsed ("fetch spec", "filter"). A column just
// past the end points at the end of the text ("the input ended here").
// Without a column only the first line, without "(column N)", is returned.
// The hint is left out: callers print it the same way for every Error.
std::string render_parse_error(std::string_view subject, std::string_view text, const Error& error);

// A character of parsed text as a message quotes it: 'x' when it is
// printable, else its value ("byte 0x0a"), so a message naming a stray
// newline or control character still reads as one line.
std::string quoted_character(char c);

// Text read from a file (an .eh_frame augmentation string) as a message
// quotes it: in double quotes, with each byte that is not printable ASCII
// written as \xNN.
std::string quoted_text(std::string_view text);

}  // namespace xref
