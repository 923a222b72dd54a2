// Display names for C++ (Itanium) and Rust (legacy and v0) symbols.
#pragma once

#include <string>
#include <string_view>

namespace xref {

// Returns the demangled name, or `mangled` itself when it is not a mangled
// name. Rust legacy names lose their "::h<16 hex>" hash suffix.
std::string demangle(std::string_view mangled);

}  // namespace xref
