// The --mark-regex pattern: grep -E syntax (plus \d \s \w \b), matched
// against one log line at a time by RE2, in time linear in the line's
// length whatever the pattern: a pattern can never stall a trace. What
// needs backtracking (a backreference such as \1) is refused.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "result.h"

namespace xref {

class MarkRegex {
 public:
  // unsupported_regex for a backreference; invalid_argument, with RE2's
  // reason, for anything else that does not compile.
  static Result<MarkRegex> compile(const std::string& pattern);

  // The first group when the pattern has one and it took part in the
  // match, else the whole match; nullopt when the line does not match.
  std::optional<std::string> match(const std::string& line) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  MarkRegex(std::string pattern, std::shared_ptr<const Compiled> compiled)
      : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}
  std::string pattern_;
  std::shared_ptr<const Compiled> compiled_;  // RE2 is safe to match from several threads
};

}  // namespace xref
