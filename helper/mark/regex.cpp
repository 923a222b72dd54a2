#include "mark/regex.h"

#include <re2/re2.h>

namespace xref {
namespace {

// grep -E as xref has always read it: POSIX syntax, leftmost-longest
// matches, bytes rather than UTF-8 (the C locale's regexec), ^ and $ at
// the line's ends, and the Perl classes and \b GNU grep accepts too.
RE2::Options grep_options() {
  RE2::Options options;
  options.set_posix_syntax(true);
  options.set_longest_match(true);
  options.set_encoding(RE2::Options::EncodingLatin1);
  options.set_one_line(true);
  options.set_perl_classes(true);
  options.set_word_boundary(true);
  options.set_log_errors(false);
  return options;
}

bool is_backreference(const std::string& escape) {
  return escape.size() == 2 && escape[0] == '\\' && escape[1] >= '1' && escape[1] <= '9';
}

}  // namespace

struct MarkRegex::Compiled {
  explicit Compiled(const std::string& pattern) : regex(pattern, grep_options()) {}
  RE2 regex;
};

Result<MarkRegex> MarkRegex::compile(const std::string& pattern) {
  if (pattern.empty()) {
    return make_error(ErrorCode::invalid_argument, "--mark-regex is empty",
                      "give the pattern of the log lines to stamp windows with, e.g. '^batch [0-9]+'");
  }
  auto compiled = std::make_shared<const Compiled>(pattern);
  const RE2& regex = compiled->regex;
  if (regex.ok()) return MarkRegex(pattern, std::move(compiled));
  if (regex.error_code() == RE2::ErrorBadEscape && is_backreference(regex.error_arg())) {
    return make_error(ErrorCode::unsupported_regex,
                      "--mark-regex '" + pattern + "' has a backreference (" + regex.error_arg() +
                          "), which xref does not support: it matches with RE2, in time linear in the line's length",
                      "write the pattern without backreferences (match the repeated text itself, or a looser "
                      "pattern)");
  }
  return make_error(ErrorCode::invalid_argument, "--mark-regex '" + pattern + "' does not compile: " + regex.error(),
                    "it is a POSIX extended regular expression (grep -E syntax), matched by RE2");
}

std::optional<std::string> MarkRegex::match(const std::string& line) const {
  const RE2& regex = compiled_->regex;
  re2::StringPiece groups[2];
  const int wanted = regex.NumberOfCapturingGroups() > 0 ? 2 : 1;
  if (!regex.Match(line, 0, line.size(), RE2::UNANCHORED, groups, wanted)) return std::nullopt;
  const re2::StringPiece& chosen = wanted == 2 && groups[1].data() != nullptr ? groups[1] : groups[0];
  return std::string(chosen.data(), chosen.size());
}

}  // namespace xref
