// Demangling picks the demangler by the name's shape: libiberty's Rust
// demangler (DMGL_RUST) returns NULL for plain C++ names, and the Itanium
// demangler prints Rust legacy names with their "::h<hash>" tail and the
// "$LT$"-style escapes left in.
#include "demangle.h"

#include <cxxabi.h>
#include <libiberty/demangle.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace xref {
namespace {

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};
using MallocString = std::unique_ptr<char, FreeDeleter>;

bool is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// Rust legacy names are Itanium-shaped ("_ZN...E") but always end their path
// with a hash segment "17h" + 16 hex digits, optionally followed by a
// ".suffix" such as ".llvm.123".
bool looks_like_rust_legacy(std::string_view name) {
  if (!name.starts_with("_ZN")) return false;
  constexpr std::string_view kHashPrefix = "17h";
  constexpr size_t kHashDigits = 16;
  for (size_t at = name.find(kHashPrefix); at != std::string_view::npos;
       at = name.find(kHashPrefix, at + 1)) {
    const size_t digits = at + kHashPrefix.size();
    const size_t end = digits + kHashDigits;  // where the closing 'E' must be
    if (end >= name.size() || name[end] != 'E') continue;
    if (end + 1 != name.size() && name[end + 1] != '.') continue;
    bool all_hex = true;
    for (size_t i = digits; i < end; ++i) all_hex = all_hex && is_lower_hex(name[i]);
    if (all_hex) return true;
  }
  return false;
}

MallocString demangle_rust(const std::string& name) {
  return MallocString(cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_RUST));
}

MallocString demangle_itanium(const std::string& name) {
  int status = 0;
  return MallocString(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status));
}

}  // namespace

std::string demangle(std::string_view mangled) {
  // An embedded NUL would silently truncate the name the C demanglers see.
  if (mangled.find('\0') != std::string_view::npos) return std::string(mangled);
  const std::string name(mangled);
  MallocString result;
  if (name.starts_with("_R")) {
    result = demangle_rust(name);
  } else if (name.starts_with("_Z")) {
    // A C++ name can look like a Rust one by accident; fall back to Itanium.
    if (looks_like_rust_legacy(name)) result = demangle_rust(name);
    if (!result) result = demangle_itanium(name);
  }
  return result ? std::string(result.get()) : name;
}

}  // namespace xref
