// Text of one trace window (the `live_trace` window schema, docs/trace.md),
// named with the debugger's symbols: one line per event, indented by depth,
// each prefixed by `W:SEQ` so `xref break W:SEQ` can refer to it.
// The debugger is reached only through AddressSymbols, so this is tested
// without LLDB.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace xref::lldb_plugin {

// One address of an event as the helper reported it: live when the window
// has a `*_live` field, static VA and module always ("" = main executable).
struct EventAddress {
  std::optional<uint64_t> live;
  std::optional<uint64_t> static_va;
  std::string module;
  bool known() const { return live || static_va; }
};

// `role` is "target", "call_site" or "probe": target_live/target_va,
// call_site_live/call_site_va (module: call_site_module, else the event's),
// probe_live/probe_va.
EventAddress event_address(const nlohmann::json& event, const std::string& role);

struct CodePlace {
  std::string function;   // demangled display name, "" when unknown
  uint64_t offset = 0;    // from the function's start
  std::string file_line;  // "sample_service.c:172", "" without line info
};

class AddressSymbols {
 public:
  virtual ~AddressSymbols() = default;
  // The live address of `address` (its own, or its static VA plus the
  // module's load bias); nullopt when the module is not loaded.
  virtual std::optional<uint64_t> live(const EventAddress& address) = 0;
  virtual CodePlace describe(const EventAddress& address) = 0;
  // Ids of the breakpoints with a location at this live address.
  virtual std::vector<uint32_t> breakpoints_at(uint64_t live_address) = 0;
};

// "complete", "incomplete: target exited", ...
std::string window_status_text(const nlohmann::json& window);
// With --mark-file: `mark "81"` (`?` after it when uncertain), `mark (no match
// yet)`, ...; "" without.
std::string window_mark_text(const nlohmann::json& window);

// "name=0x3e80 bps=25": fetched values as a window shows them (signed ones
// in decimal, unreadable ones named).
std::string fetches_text(const nlohmann::json& fetches);

// "handle_request+0x18 at sample_service.c:172": a code place as the
// debugger names it, else its module:static VA, else its live address
// (windows separate the line with " ").
std::string where_text(const CodePlace& place, const EventAddress& address, const char* separator = " at ");

// An address field of the helper's JSON ("0x55..." or a number).
std::optional<uint64_t> hex_field(const nlohmann::json& object, const std::string& key);

// The header line and one line per event.
std::vector<std::string> render_window(const nlohmann::json& window, uint64_t session, AddressSymbols& symbols);

// "W:SEQ" of an event.
std::string event_reference(const nlohmann::json& window, const nlohmann::json& event);

}  // namespace xref::lldb_plugin
