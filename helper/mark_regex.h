// The --mark-regex pattern: a POSIX extended regular expression (grep -E
// syntax), matched against one log line at a time.
#pragma once

#include <regex.h>

#include <memory>
#include <optional>
#include <string>

#include "result.h"

namespace xref {

class MarkRegex {
 public:
  // invalid_argument, with the compiler's reason, when it does not compile.
  static Result<MarkRegex> compile(const std::string& pattern);

  // The first group when the pattern has one, else the whole match; nullopt
  // when the line does not match.
  std::optional<std::string> match(const std::string& line) const;
  const std::string& pattern() const { return pattern_; }

 private:
  struct Compiled;
  MarkRegex(std::string pattern, std::shared_ptr<const Compiled> compiled)
      : pattern_(std::move(pattern)), compiled_(std::move(compiled)) {}
  std::string pattern_;
  std::shared_ptr<const Compiled> compiled_;  // regexec is safe from several threads on one regex_t
};

}  // namespace xref
