#include "serve/session_request.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>

#include "command/option_values.h"

namespace xref::serve {
namespace {

ProtocolError invalid_argument(std::string message, std::string hint = {}) {
  return cli_error(make_error(ErrorCode::invalid_argument, std::move(message), std::move(hint)));
}

// Parses `words` (after the command) into what `app` defines; help and
// usage errors as the CLI has them. The debugger's process fills in --pid
// and --bin when the words do not.
std::optional<std::variant<HelpText, ProtocolError>> parse_words(CLI::App& app, ProcessCommandOptions& options,
                                                                 const std::vector<std::string>& words,
                                                                 const RequestContext& context,
                                                                 const std::string& command) {
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
    return cli_error(usage_error(error, "see `xref " + command + " --help`"));
  }
  if (pid->count() == 0) {
    if (!context.pid) return invalid_argument("--pid is required", "pass --pid or context.pid");
    options.pid = *context.pid;
  }
  if (options.bin.empty()) options.bin = context.executable;
  return std::nullopt;
}

}  // namespace

std::variant<SessionSpec, HelpText, ProtocolError> parse_session_start(const std::vector<std::string>& words,
                                                                       const RequestContext& context) {
  const std::string& command = words.front();
  if (command == "watch" || command == "profile") {
    return invalid_argument("'" + command + "' sessions are not available in this xref yet", "use trace or probe");
  }
  if (command != "trace" && command != "probe") {
    return invalid_argument("no session command named '" + command + "'",
                            "session.start runs trace and probe; maps, resolve, memscan and doctor go through "
                            "command");
  }
  SessionSpec spec;
  spec.command = command;
  if (command == "probe") {
    CLI::App app{"bounded hit counts, callers, groups and samples", "xref probe"};
    add_probe_options(app, spec.probe);
    if (auto early = parse_words(app, spec.probe, words, context, command)) {
      if (auto* help = std::get_if<HelpText>(&*early)) return *help;
      return std::get<ProtocolError>(*early);
    }
    spec.probe.request.debugger = context.debugger;
    if (auto valid = validate_probe_request(spec.probe.request); !valid) return cli_error(valid.error());
    return spec;
  }
  CLI::App app{"ordered, thread-scoped call-trace windows", "xref trace"};
  add_trace_options(app, spec.options);
  if (auto early = parse_words(app, spec.options, words, context, command)) {
    if (auto* help = std::get_if<HelpText>(&*early)) return *help;
    return std::get<ProtocolError>(*early);
  }
  spec.options.request.debugger = context.debugger;
  if (auto valid = validate_trace_request(spec.options.request); !valid) return cli_error(valid.error());
  return spec;
}

}  // namespace xref::serve
