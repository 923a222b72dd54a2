// The text shape of a trace window (docs/trace.md, "Text output"), made
// from the window's JSON object: live `xref trace` prints it as windows
// close, `xref trace show` from a saved trace. One renderer, so the two
// cannot drift apart.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace xref {

// "req=0x7ff3106f6a80", "n=-2" (signed fetches in decimal),
// "p=<unreadable: EFAULT>", from one fetched value of the window schema.
std::string fetch_text(const nlohmann::json& fetch);

// Function names for text lines: as c++filt -p prints them (without the
// parameter list and a template's return type; demangle.h,
// short_function_name), unless two of the names given would then look the same.
class NameLabels {
 public:
  explicit NameLabels(const std::vector<std::string>& names);
  std::string operator()(const std::string& name) const;

 private:
  std::vector<std::string> ambiguous_;  // short names shared by different full names
};

// "window 1  tid 31992  start 0x1c20  status complete  stop 0x1c20  req=0x7ff3106f6a80"
std::string window_line(const nlohmann::json& window);

// With --mark-file: `mark "81"` (`?` after it when the line may have been
// written after the window opened), `mark (no match yet)`, ...; "" without.
std::string window_mark_text(const nlohmann::json& window);

// The window line and one line per event.
void print_window_text(std::ostream& out, const nlohmann::json& window);

}  // namespace xref
