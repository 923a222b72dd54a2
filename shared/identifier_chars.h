// What a C identifier is made of, for every parser of names the user types
// (fetch specs, filter expressions) and of names read back (demangled C++).
#pragma once

namespace xref {

constexpr bool is_identifier_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
constexpr bool is_identifier_char(char c) { return is_identifier_start(c) || (c >= '0' && c <= '9'); }

}  // namespace xref
