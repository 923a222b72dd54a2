// xref show [--session N] [--all] [--json] [--new]: the windows the helper
// sent, rendered with LLDB's symbols. The stop hook runs `xref show --new`.
#include "commands.h"
#include "lldb_symbols.h"
#include "number_parse.h"
#include "stop_signal.h"
#include "window_render.h"

namespace xref::lldb_plugin {
namespace {

struct ShowOptions {
  std::optional<uint64_t> session;
  bool all = false;
  bool json = false;
  bool fresh_only = false;  // --new: quiet when there is nothing new
};

bool parse_show_options(const std::vector<std::string>& words, ShowOptions& options, std::string& error) {
  for (size_t index = 0; index < words.size(); ++index) {
    const std::string& word = words[index];
    if (word == "--all") {
      options.all = true;
    } else if (word == "--json") {
      options.json = true;
    } else if (word == "--new") {
      options.fresh_only = true;
    } else if (word == "--session" && index + 1 < words.size()) {
      auto id = parse_u64(words[++index], "--session");
      if (!id) {
        error = id.error().message + " (column " + std::to_string(id.error().column) + ")";
        return false;
      }
      options.session = *id;
    } else {
      error = "unexpected word '" + word + "'; usage: xref show [--session N] [--all] [--json]";
      return false;
    }
  }
  return true;
}

void print_window(CommandScope& scope, SessionRecord& session, WindowRecord& record, bool json) {
  if (json) {
    scope.print(nlohmann::json{{"session", session.id}, {"window", record.window}}.dump());
  } else {
    LldbSymbols symbols(session.target);
    for (auto& line : render_window(record.window, session.id, symbols)) scope.print(std::move(line));
  }
  record.shown = true;
}

// Probe sessions: at a stop (--new) what changed since the previous one;
// asked for, the whole result so far.
void print_probe_sessions(CommandScope& scope, const ShowOptions& options) {
  for (auto& [id, session] : scope.state().sessions()) {
    if ((options.session && id != *options.session) || session.command != "probe") continue;
    if (options.json && !options.fresh_only) {
      if (session.document.is_object()) {
        scope.print(nlohmann::json{{"session", id}, {"document", session.document}}.dump());
      }
      continue;
    }
    show_probe_session(session, !options.fresh_only, scope.lines());
  }
}

void print_end_lines(CommandScope& scope, std::optional<uint64_t> only, bool again) {
  for (auto& [id, session] : scope.state().sessions()) {
    if ((only && id != *only) || !session.ended || (session.end_shown && !again)) continue;
    scope.print(session_end_line(session));
    session.end_shown = true;
  }
}

}  // namespace

const char* ShowCommand::help() const {
  return "Print the trace windows that closed since they were last shown (all of them with --all), and each probe "
         "session's result so far. Both also print by themselves when the process stops (a probe: what changed).";
}

const char* ShowCommand::syntax() const {
  return "xref show [--session N] [--all] [--json]\n"
         "  --session N   only session N's windows\n"
         "  --all         every window kept, shown before or not\n"
         "  --json        one JSON line per window ({\"session\", \"window\"}, the live_trace window schema) and per probe\n"
         "                session ({\"session\", \"document\"}, the live_probe document)\n"
         "Each event line starts with W:SEQ (window:event) for `xref break W:SEQ`.";
}

bool ShowCommand::execute(lldb::SBDebugger debugger, char** command, lldb::SBCommandReturnObject& result) {
  const std::vector<std::string> words = words_of(command);
  // The stop hook: a stop by the program's own --stop-when signal goes on (stop_signal.h).
  if (has_word(words, "--new") && pass_program_signal(debugger, result)) return true;
  CommandScope scope(debugger, result);
  // The stop listener leaves this stop to the hook (stop_listener.h).
  if (has_word(words, "--new")) scope.state().stop_hook_ran(debugger.GetSelectedTarget().GetProcess());
  if (wants_help(words)) return print_help(scope);
  ShowOptions options;
  std::string error;
  if (!parse_show_options(words, options, error)) return scope.fail("xref: " + error);
  PluginState& state = scope.state();
  if (options.session && state.find_session(*options.session) == nullptr) {
    return scope.fail("xref: no session " + std::to_string(*options.session) + "; `xref sessions` lists them");
  }
  state.await_pending_windows(scope.lines());
  print_probe_sessions(scope, options);

  if (options.all) {
    for (auto& [id, session] : state.sessions()) {
      if (options.session && id != *options.session) continue;
      if (session.windows_dropped > 0) {
        scope.print("xref: session " + std::to_string(id) + ": the " + std::to_string(session.windows_dropped) +
                    " oldest windows are no longer kept");
      }
      for (auto& record : session.windows) print_window(scope, session, record, options.json);
    }
    print_end_lines(scope, options.session, true);
    return true;
  }

  auto windows = state.unshown_windows(options.session);
  const size_t limit = options.fresh_only ? kWindowsPerStop : windows.size();
  for (size_t index = 0; index < windows.size() && index < limit; ++index) {
    print_window(scope, *windows[index].first, *windows[index].second, options.json);
  }
  if (windows.size() > limit) {
    scope.print("xref: " + std::to_string(windows.size() - limit) + " more new windows: `xref show` prints them");
  }
  print_end_lines(scope, options.session, false);
  if (windows.empty() && !options.fresh_only && !options.json) {
    size_t running = 0, traces = 0;
    for (const auto& [id, session] : state.sessions()) {
      if (session.command != "trace" || (options.session && id != *options.session)) continue;
      ++traces;
      running += session.ended ? 0 : 1;
    }
    if (traces == 0) return true;  // probe sessions printed above
    scope.print("xref: no new windows (" + std::to_string(running) + " session" + (running == 1 ? "" : "s") +
                " running; `xref show --all` prints the earlier ones)");
  }
  return true;
}

}  // namespace xref::lldb_plugin
