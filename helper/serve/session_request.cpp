#include "serve/session_request.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "command/option_values.h"
#include "command/usage_text.h"
#include "watch/debugger_expressions.h"

namespace xref::serve {
namespace {

ProtocolError invalid_argument(std::string message, std::string hint = {}) {
  return cli_error(make_error(ErrorCode::invalid_argument, std::move(message), std::move(hint)));
}

// The words after the command, parsed into `spec.*member` with the
// command's CLI definitions (`add`) and checks (`validate`); help and usage
// errors as the CLI has them. The debugger's process fills in --pid and
// --bin when the words do not, and its context the debugger's part.
template <typename Options, typename Request>
std::variant<SessionSpec, HelpText, ProtocolError> parse_command(const std::vector<std::string>& words,
                                                                 const RequestContext& context,
                                                                 Options SessionSpec::*member,
                                                                 void (*add)(CLI::App&, Options&),
                                                                 Result<void> (*validate)(const Request&),
                                                                 const std::string& description) {
  SessionSpec spec;
  spec.command = words.front();
  Options& options = spec.*member;
  CLI::App app{description, "xref " + spec.command};
  add(app, options);
  CLI::Option* pid = app.get_option("--pid");
  pid->required(false);
  std::vector<std::string> args(words.begin() + 1, words.end());
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return HelpText{app.help()};
  } catch (const CLI::CallForAllHelp&) {
    return HelpText{app.help("", CLI::AppFormatMode::All)};
  } catch (const CLI::ParseError& error) {
    return cli_error(usage_error(error, app));
  }
  if (pid->count() == 0) {
    if (!context.pid) return invalid_argument("--pid is required", "pass --pid or context.pid");
    options.pid = *context.pid;
  }
  if (options.bin.empty()) options.bin = context.executable;
  // A session lasts until a bound, session.stop or the target's exit unless
  // its words say how long (the shell's probe stops after a second).
  if (app.get_option("--duration-ms")->count() == 0 && app.get_option("--duration")->count() == 0) {
    options.request.duration_ms = 0;
  }
  if constexpr (requires { options.request.debugger; }) options.request.debugger = context.debugger;
  if (auto valid = validate(options.request); !valid) return cli_error(valid.error());
  return spec;
}

}  // namespace

std::variant<SessionSpec, HelpText, ProtocolError> parse_session_start(const std::vector<std::string>& words,
                                                                       const RequestContext& context) {
  const std::string& command = words.front();
  if (command == "profile") {
    return parse_command(words, context, &SessionSpec::profile, add_profile_session_options, validate_profile_session,
                         kProfileSessionDescription);
  }
  if (command == "watch") {
    auto parsed = parse_command(words, context, &SessionSpec::watch, add_watch_options, validate_watch_request,
                                "every write to a variable, struct or buffer, without stopping the process");
    if (auto* spec = std::get_if<SessionSpec>(&parsed)) {
      spec->watch.request.debugger_hw_slots = context.debug_registers_used;
      // A malformed EXPR@N or --follow, before the debugger evaluates anything.
      if (auto expressions = watch_expressions(spec->watch.request); !expressions) return cli_error(expressions.error());
    }
    return parsed;
  }
  if (command == "trace") {
    auto parsed = parse_command(words, context, &SessionSpec::options, add_trace_options, validate_trace_request,
                                "ordered, thread-scoped call-trace windows");
    // --here is a thread of the debugger's process: another --pid cannot
    // hold it (its memory would be read at that thread's addresses).
    const auto* spec = std::get_if<SessionSpec>(&parsed);
    if (spec && spec->options.request.here && context.pid && spec->options.pid != *context.pid) {
      const std::string pid = std::to_string(spec->options.pid), own = std::to_string(*context.pid);
      return invalid_argument("--here opens the window on the stopped thread of process " + own +
                                  ", the debugger's; --pid " + pid + " names another process",
                              "leave --pid out, or trace process " + pid + " with --start FUNCTION");
    }
    return parsed;
  }
  if (command == "probe") {
    return parse_command(words, context, &SessionSpec::probe, add_probe_options, validate_probe_request,
                         "bounded hit counts, callers, groups and samples");
  }
  return invalid_argument("no session command named '" + command + "'",
                          "session.start runs trace, probe, watch and profile; maps, resolve, memscan and doctor go through command");
}

}  // namespace xref::serve
