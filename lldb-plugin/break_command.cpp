// xref break W:SEQ: an LLDB breakpoint where event SEQ of window W happened:
// the call site of an entry (its target when it has none), the probed
// instruction of a return.
#include "commands.h"
#include "hex.h"
#include "lldb_symbols.h"
#include "number_parse.h"
#include "window_render.h"

namespace xref::lldb_plugin {
namespace {

struct EventReference {
  uint64_t window = 0;
  uint64_t seq = 0;
};

bool parse_reference(const std::string& text, EventReference& reference, std::string& error) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    error = "'" + text + "' is not W:SEQ (window:event, as the first column of `xref show` prints it)";
    return false;
  }
  auto window = parse_u64(std::string_view(text).substr(0, colon), "window");
  if (!window) {
    error = window.error().message + " (column " + std::to_string(window.error().column) + ")";
    return false;
  }
  auto seq = parse_u64(std::string_view(text).substr(colon + 1), "event", static_cast<int>(colon) + 2);
  if (!seq) {
    error = seq.error().message + " (column " + std::to_string(seq.error().column) + ")";
    return false;
  }
  reference = {*window, *seq};
  return true;
}

}  // namespace

const char* BreakCommand::help() const {
  return "Set an LLDB breakpoint where a traced event happened: the call site of an entry (`W:SEQ` from the "
         "first column of `xref show`).";
}

const char* BreakCommand::syntax() const {
  return "xref break W:SEQ [--session N]\n"
         "  W:SEQ        window W, event SEQ; an entry breaks at its call site (or its target when it has none),\n"
         "               a return at the instruction it was seen at\n"
         "  --session N  the session of window W (default: the newest session that has a window W)";
}

bool BreakCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  CommandScope scope(debugger, result);
  const std::vector<std::string> words = words_of(command);
  if (wants_help(words)) return print_help(scope);
  std::optional<uint64_t> only;
  std::string text;
  for (size_t index = 0; index < words.size(); ++index) {
    if (words[index] == "--session" && index + 1 < words.size()) {
      auto id = parse_u64(words[++index], "--session");
      if (!id) return scope.fail("xref: " + id.error().message);
      only = *id;
    } else if (text.empty()) {
      text = words[index];
    } else {
      return scope.fail("xref: usage: xref break W:SEQ [--session N]");
    }
  }
  if (text.empty()) return scope.fail("xref: usage: xref break W:SEQ [--session N]");
  EventReference reference;
  std::string error;
  if (!parse_reference(text, reference, error)) return scope.fail("xref: " + error);

  SessionRecord* found_session = nullptr;
  const nlohmann::json* found_event = nullptr;
  auto& sessions = scope.state().sessions();
  for (auto it = sessions.rbegin(); it != sessions.rend() && found_event == nullptr; ++it) {
    if (only && it->first != *only) continue;
    for (const auto& record : it->second.windows) {
      if (record.window.value("window_id", uint64_t{0}) != reference.window) continue;
      const auto events = record.window.find("events");
      if (events == record.window.end() || !events->is_array()) continue;
      for (const auto& event : *events) {
        if (event.value("seq", uint64_t{0}) == reference.seq) {
          found_session = &it->second;
          found_event = &event;
          break;
        }
      }
      if (found_event != nullptr) break;
    }
  }
  if (found_event == nullptr) {
    return scope.fail("xref: no event " + text + (only ? " in session " + std::to_string(*only) : std::string()) +
                      "; `xref show --all` lists the windows kept");
  }
  const nlohmann::json& event = *found_event;
  const std::string kind = event.value("kind", std::string());
  EventAddress address;
  std::string what;
  if (kind == "entry") {
    address = event_address(event, "call_site");
    what = "the call site of";
    if (!address.known()) {
      address = event_address(event, "target");
      what = "the entry of";
    }
  } else {
    address = event_address(event, "probe");
    what = "the " + kind + " of";
  }
  LldbSymbols symbols(found_session->target);
  const auto live = symbols.live(address);
  if (!live) return scope.fail("xref: the address of event " + text + " is not loaded in the process any more");
  // A debugger int3 over a probe's would outlive the probe: when the
  // session detaches, the kernel restores the original byte, and LLDB later
  // writes back the int3 it saved.
  const auto probe = symbols.live(event_address(event, "probe"));
  if (!found_session->ended && probe && *probe == *live) {
    return scope.fail("xref: session " + std::to_string(found_session->id) + " has a probe at " + to_hex(*live) +
                      ": a breakpoint there would be swallowed; `xref stop " + std::to_string(found_session->id) +
                      "` first");
  }
  lldb::SBTarget target = found_session->target;
  lldb::SBBreakpoint breakpoint = target.BreakpointCreateByAddress(*live);
  if (!breakpoint.IsValid()) return scope.fail("xref: LLDB could not set a breakpoint at " + to_hex(*live));
  const std::string function = symbols.describe(event_address(event, "target")).function;
  const std::string where = describe_address(target, target.ResolveLoadAddress(*live));
  scope.print("Breakpoint " + std::to_string(breakpoint.GetID()) + ": " + to_hex(*live) +
              (where.empty() ? "" : " " + where) + " (" + what + " " +
              (function.empty() ? event.value("symbol", std::string("?")) : function) + ", event " + text + ")");
  return true;
}

}  // namespace xref::lldb_plugin
