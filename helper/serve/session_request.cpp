#include "serve/session_request.h"

#include <CLI/CLI.hpp>
#include <algorithm>

#include "command/option_values.h"

namespace xref::serve {
namespace {

ProtocolError invalid_argument(std::string message, std::string hint = {}) {
  return cli_error(make_error(ErrorCode::invalid_argument, std::move(message), std::move(hint)));
}

}  // namespace

std::variant<SessionSpec, HelpText, ProtocolError> parse_session_start(const std::vector<std::string>& words,
                                                                       const RequestContext& context) {
  const std::string& command = words.front();
  if (command == "probe" || command == "watch" || command == "profile") {
    return invalid_argument("'" + command + "' sessions are not available in this xref yet", "use trace");
  }
  if (command != "trace") {
    return invalid_argument("no session command named '" + command + "'",
                            "session.start runs trace; maps, resolve, memscan and doctor go through command");
  }
  SessionSpec spec;
  CLI::App app{"ordered, thread-scoped call-trace windows", "xref trace"};
  add_trace_options(app, spec.options);
  // The debugger's process fills in --pid; the words may still name one.
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
    return cli_error(usage_error(error, "see `xref trace --help`"));
  }
  if (pid->count() == 0) {
    if (!context.pid) return invalid_argument("--pid is required", "pass --pid or context.pid");
    spec.options.pid = *context.pid;
  }
  if (spec.options.bin.empty()) spec.options.bin = context.executable;
  spec.options.request.debugger = context.debugger;
  if (auto valid = validate_trace_request(spec.options.request); !valid) return cli_error(valid.error());
  return spec;
}

}  // namespace xref::serve
