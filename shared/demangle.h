// Display names for C++ (Itanium) and Rust (legacy and v0) symbols.
#pragma once

#include <string>
#include <string_view>

namespace xref {

// Returns the demangled name, or `mangled` itself when it is not a mangled
// name. Rust legacy names lose their "::h<16 hex>" hash suffix.
std::string demangle(std::string_view mangled);

// A demangled function name as `nm -C` prints it, without its parameter
// list: the last balanced "(...)" of the name with the cv- and
// ref-qualifiers after it, and any " [clone .cold]" suffix, are removed at
// nesting depth 0 only, so scopes keep theirs:
//   "lam_f(int)::{lambda(int)#1}::operator()(int) const"
//     -> "lam_f(int)::{lambda(int)#1}::operator()".
// A name without a parameter list is returned as it is.
std::string without_parameters(std::string_view demangled);

// The same name without the return type nm -C prints before a function
// template's name ("int twice<int>(int)" -> "twice<int>"); "" when the name
// has none.
std::string without_return_type(std::string_view name_without_parameters);

// Both: what `c++filt -p` prints ("names::twice<int>",
// "lam_f(int)::{lambda(int)#1}::operator()"); the short label of a function.
std::string short_function_name(std::string_view demangled);

// The identifier that every stored (mangled or plain) spelling of a function
// a user names by `name` contains literally, so a search can skip the names
// that lack it without demangling them: the last identifier at nesting depth
// 0 ("settle" for "svc::settle(int) const", "_M_invoke" for
// "std::_Function_handler<int (int), F>::_M_invoke"). "" when there is no
// such identifier: operators ("operator()", "operator new"), names the
// Itanium ABI abbreviates ("std::allocator<char>::allocator"), built-in
// types, and non-ASCII names (Rust v0 punycode).
std::string literal_identifier(std::string_view name);

}  // namespace xref
