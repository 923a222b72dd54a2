// The text shape of a trace window (docs/trace.md, "Text output"). Live
// `xref trace` prints it as windows close, from the window itself
// (window_format.h); `xref trace show` from a saved window's JSON. Both
// hand their pieces to the line builders here, so the two spell every line
// the same way.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace xref {

// "req=0x7ff3106f6a80", "n=-2" (signed fetches in decimal),
// "p=<unreadable: EFAULT>", from one fetched value of the window schema.
std::string fetch_text(const nlohmann::json& fetch);
// The same from its parts: `value` when read (shown in decimal when
// `is_signed`), else `error` as the JSON spells it ("unreadable: EFAULT (-14)").
void append_fetch_text(std::string& out, std::string_view name, std::optional<uint64_t> value, bool is_signed,
                       std::string_view error);

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

// One event line's pieces.
struct EventLineParts {
  std::string_view kind;            // "entry", "return", "tail_exit", "unwound", "stop"
  int64_t depth = 0;
  std::string_view module;          // "" inside the executable
  std::string_view target_va;       // "0x1c20"
  std::string_view call_site_va;    // entries: "" when unknown
  std::string_view call_site_module;
  bool call_site_verified = false;
  std::string_view name;            // as labelled (NameLabels)
  bool indirect = false;            // `name` is an indirect call's target
  std::string_view implementation;  // a GNU IFUNC's implementation, or ""
  bool tail_call = false;
  bool inferred = false;
  bool depth_overflow = false;
  std::string_view fetches;         // "  a=1  b=0x2" (append_fetch_text), or ""
};
// The line, with its '\n'.
void append_event_line(std::string& out, const EventLineParts& parts);

// The window line's pieces.
struct WindowLineParts {
  uint64_t window_id = 0;
  uint64_t tid = 0;
  std::string_view start_module;  // "" inside the executable
  std::string_view start_va;
  std::string_view status;
  std::string_view stop_va;
  std::string_view ended_in;
  bool end_inferred = false;
  std::string_view start_fetches;  // "  a=1", as for events
  bool possible_loss = false;
  std::optional<uint64_t> lost_events;
  std::string_view mark;           // window_mark_text, or ""
};
// "window 1  tid 31992  start 0x1c20  status complete  stop 0x1c20  req=0x7ff3106f6a80", with its '\n'.
void append_window_line(std::string& out, const WindowLineParts& parts);
std::string window_line(const nlohmann::json& window);

// With --mark-file: `mark "81"` (`?` after it when the line may have been
// written after the window opened), `mark (no match yet)`, ...; "" without.
std::string window_mark_text(const nlohmann::json& window);

// The window line and one line per event, from a saved window.
void print_window_text(std::ostream& out, const nlohmann::json& window);

}  // namespace xref
