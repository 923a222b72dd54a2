// --mark-regex patterns: the input is "PATTERN\nLOG LINE". The pattern is
// compiled as `xref trace` compiles it and matched against the line; what a
// match returns is part of the line, and a window stamped with it renders
// as text and as JSON, as `xref trace` prints windows (a log line is
// whatever bytes the log holds).
#include <string>

#include "fuzz_support.h"
#include "mark/regex.h"
#include "output/json_envelope.h"
#include "render/window_text.h"

using namespace xref;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [pattern, line] = fuzz::split_first_line(fuzz::as_text(data, size));
  auto regex = MarkRegex::compile(std::string(pattern));
  if (!regex) {
    fuzz::require_one_line_error(regex.error());
    return 0;
  }
  const std::string text(line);
  const auto matched = regex->match(text);
  if (!matched) return 0;
  fuzz::require(text.find(*matched) != std::string::npos, "a match that is not part of the line", *matched);
  const nlohmann::json window = {{"window_id", 1}, {"mark_status", "matched"}, {"mark_match", *matched},
                                 {"mark_certain", true}};
  fuzz::require(render::window_mark_text(window).starts_with("mark "), "a matched mark renders without its text");
  fuzz::require(nlohmann::json::accept(json_text(window)), "a stamped window renders as broken JSON");
  return 0;
}
