#include "mark_regex.h"

namespace xref {

struct MarkRegex::Compiled {
  regex_t regex{};
  bool compiled = false;
  ~Compiled() {
    if (compiled) regfree(&regex);
  }
};

Result<MarkRegex> MarkRegex::compile(const std::string& pattern) {
  if (pattern.empty()) {
    return make_error(ErrorCode::invalid_argument, "--mark-regex is empty",
                      "give the pattern of the log lines to stamp windows with, e.g. '^batch [0-9]+'");
  }
  auto compiled = std::make_shared<Compiled>();
  const int status = regcomp(&compiled->regex, pattern.c_str(), REG_EXTENDED);
  if (status != 0) {
    char reason[256];
    regerror(status, &compiled->regex, reason, sizeof reason);
    return make_error(ErrorCode::invalid_argument, "--mark-regex '" + pattern + "' does not compile: " + reason,
                      "it is a POSIX extended regular expression (grep -E syntax)");
  }
  compiled->compiled = true;
  return MarkRegex(pattern, std::move(compiled));
}

std::optional<std::string> MarkRegex::match(const std::string& line) const {
  regmatch_t groups[2];
  if (regexec(&compiled_->regex, line.c_str(), 2, groups, 0) != 0) return std::nullopt;
  const regmatch_t& chosen = groups[1].rm_so >= 0 ? groups[1] : groups[0];
  return line.substr(static_cast<size_t>(chosen.rm_so), static_cast<size_t>(chosen.rm_eo - chosen.rm_so));
}

}  // namespace xref
