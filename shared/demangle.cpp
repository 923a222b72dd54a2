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
#include <vector>

#include "identifier_chars.h"

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

namespace xref {
namespace {

bool ends_with_word(std::string_view text, std::string_view word) {
  if (!text.ends_with(word)) return false;
  const size_t before = text.size() - word.size();
  return before == 0 || text[before - 1] == ' ' || text[before - 1] == ')' || text[before - 1] == '&';
}

// Removes trailing " const", " volatile", " &", " &&" (and "noexcept"),
// which the demangler prints after a member function's parameters.
std::string_view without_qualifiers(std::string_view text) {
  for (bool changed = true; changed;) {
    changed = false;
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    for (std::string_view word : {"const", "volatile", "noexcept", "&&", "&"}) {
      if (ends_with_word(text, word)) {
        text.remove_suffix(word.size());
        changed = true;
        break;
      }
    }
  }
  return text;
}

// " [clone .cold]", " [clone .constprop.0]" ... at the end.
std::string_view without_clone_suffixes(std::string_view text) {
  for (;;) {
    while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
    const size_t clone = text.rfind(" [clone ");
    if (clone == std::string_view::npos || text.back() != ']' ||
        text.find(']', clone) != text.size() - 1) {
      return text;
    }
    text = text.substr(0, clone);
  }
}

}  // namespace

std::string without_parameters(std::string_view demangled) {
  std::string_view text = without_qualifiers(without_clone_suffixes(demangled));
  if (text.empty() || text.back() != ')') return std::string(without_clone_suffixes(demangled));
  // The parameter list is the balanced group that closes the name; parentheses
  // are balanced in demangled names ("operator()" is its own pair), angle
  // brackets are not ("operator<"), so only parentheses are counted.
  int depth = 0;
  for (size_t i = text.size(); i-- > 0;) {
    if (text[i] == ')') {
      ++depth;
    } else if (text[i] == '(' && --depth == 0) {
      if (i == 0) break;
      return std::string(text.substr(0, i));
    }
  }
  return std::string(demangled);
}

std::string without_return_type(std::string_view name) {
  // Only function templates carry a return type, and their names end in
  // their template arguments.
  if (name.empty() || name.back() != '>') return "";
  // The name starts after the last space at nesting depth 0 before it; an
  // operator's own characters ("operator<< <char>", "operator new") neither
  // nest nor end the return type.
  int depth = 0;
  size_t last_space = std::string_view::npos;
  for (size_t i = 0; i < name.size(); ++i) {
    if (depth == 0 && name.compare(i, 8, "operator") == 0 && (i == 0 || name[i - 1] == ':' || name[i - 1] == ' ')) {
      break;
    }
    const char c = name[i];
    if (c == '(' || c == '<' || c == '[' || c == '{') ++depth;
    else if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0) --depth;
    else if (c == ' ' && depth == 0) last_space = i;
  }
  if (last_space == std::string_view::npos) return "";
  return std::string(name.substr(last_space + 1));
}

std::string short_function_name(std::string_view demangled) {
  std::string bare = without_parameters(demangled);
  std::string untyped = without_return_type(bare);
  return untyped.empty() ? bare : untyped;
}

namespace {

// Words a query may end in that are not the function's own identifier.
bool is_qualifier(std::string_view word) {
  return word == "const" || word == "volatile" || word == "noexcept";
}

// Identifiers whose mangled spelling is not the identifier: the Itanium
// ABI's std abbreviations (St, Sa, Sb, Ss, Si, So, Sd) and built-in types.
bool is_encoded_word(std::string_view word) {
  static constexpr std::string_view kWords[] = {
      "std",          "allocator", "basic_string", "string", "char_traits", "basic_istream", "basic_ostream",
      "basic_iostream", "istream", "ostream",      "iostream", "void",      "bool",          "char",
      "wchar_t",      "char8_t",   "char16_t",     "char32_t", "short",     "int",           "long",
      "float",        "double",    "unsigned",     "signed",   "auto",      "decltype",      "operator"};
  for (std::string_view known : kWords) {
    if (word == known) return true;
  }
  return false;
}

}  // namespace

std::string literal_identifier(std::string_view name) {
  std::vector<std::string_view> words;
  int depth = 0;
  for (size_t i = 0; i < name.size();) {
    const char c = name[i];
    if (static_cast<unsigned char>(c) >= 0x80) return "";
    if (c == '(' || c == '<' || c == '[' || c == '{') {
      ++depth;
    } else if ((c == ')' || c == '>' || c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (depth == 0 && is_identifier_start(c)) {
      size_t end = i;
      while (end < name.size() && is_identifier_char(name[end])) ++end;
      words.push_back(name.substr(i, end - i));
      i = end;
      continue;
    }
    ++i;
  }
  while (!words.empty() && is_qualifier(words.back())) words.pop_back();
  if (words.empty() || is_encoded_word(words.back())) return "";
  if (words.size() >= 2 && words[words.size() - 2] == "operator") return "";  // "operator new", "operator bool"
  return std::string(words.back());
}

}  // namespace xref
