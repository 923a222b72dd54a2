#include "demangle.h"

#include <cxxabi.h>
#include <libiberty/demangle.h>

#include <cstdlib>
#include <string>

namespace xref {
namespace {

// Rust legacy symbols are Itanium-shaped but end in "17h<16 hex>E".
bool is_rust_legacy(std::string_view name) {
  if (name.size() < 24 || name.substr(0, 3) != "_ZN" || name.back() != 'E') return false;
  const std::string_view tail = name.substr(name.size() - 21, 20);
  if (tail.substr(0, 3) != "17h") return false;
  for (char c : tail.substr(3)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string take(char* demangled, std::string_view fallback) {
  if (demangled == nullptr) return std::string(fallback);
  std::string result(demangled);
  std::free(demangled);
  return result;
}

}  // namespace

std::string demangle(std::string_view mangled) {
  const std::string name(mangled);
  if (name.rfind("_R", 0) == 0 || is_rust_legacy(name)) {
    return take(cplus_demangle(name.c_str(), DMGL_PARAMS | DMGL_ANSI | DMGL_RUST), mangled);
  }
  if (name.rfind("_Z", 0) == 0) {
    int status = 0;
    return take(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), mangled);
  }
  return name;
}

}  // namespace xref
