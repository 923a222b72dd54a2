// JSON from outside the helper (protocol lines, saved traces) parsed with
// its nesting bounded: nlohmann's parser is iterative, but copying, dumping
// and comparing a value recurse once per level, so ~300k nested `[` in one
// line would overflow the stack later. A value nested deeper than the
// limit is refused while it is parsed, before the deep part is built.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace xref {

// Far above what xref writes (a saved window nests 5 levels) and far below
// what a thread's stack survives.
constexpr size_t kMaxJsonDepth = 256;

struct UntrustedJson {
  enum class Failure { none, syntax, too_deep };
  nlohmann::json value;  // null unless failure is none
  Failure failure = Failure::none;
  bool ok() const { return failure == Failure::none; }
};

// One JSON value (surrounding whitespace allowed, nothing else).
UntrustedJson parse_untrusted_json(std::string_view text, size_t max_depth = kMaxJsonDepth);

// "nested deeper than 256 levels" for messages.
std::string too_deep_text(size_t max_depth = kMaxJsonDepth);

}  // namespace xref
