#include "serve/command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <sstream>

#include "command/option_values.h"
#include "command/usage_text.h"
#include "output/json_envelope.h"
#include "output/report.h"
#include "serve/captured_output.h"
#include "serve/commands.h"

namespace xref::serve {
namespace {

bool is_one_shot(const std::string& name) {
  return name == "maps" || name == "resolve" || name == "memscan" || name == "doctor";
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The last line of `text` that is a JSON document.
std::optional<nlohmann::json> last_document(const std::string& text) {
  std::istringstream lines(text);
  std::optional<nlohmann::json> document;
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) document = std::move(parsed);
  }
  return document;
}

}  // namespace

std::variant<nlohmann::json, ProtocolError> run_one_shot(const std::vector<std::string>& words,
                                                         const RequestContext& context, bool as_lines) {
  const std::string& name = words.front();
  if (name == "trace") {
    return cli_error(make_error(ErrorCode::invalid_argument, "trace runs as a session, not as a one-shot command",
                                "send session.start with argv [\"trace\", ...]"));
  }
  if (!is_one_shot(name) && name != "--help" && name != "-h") {
    return cli_error(make_error(ErrorCode::invalid_argument, "no one-shot command named '" + name + "'",
                                "commands: maps, resolve, memscan, doctor"));
  }

  CLI::App app{"xref: ordered, thread-scoped live tracing of native processes", "xref"};
  app.require_subcommand(1);
  app.fallthrough(false);
  int exit_status = 0;
  setup_one_shot_commands(app, exit_status);
  std::vector<std::string> args(words);
  const bool typed_json = std::find(args.begin(), args.end(), "--json") != args.end();
  // Protocol 2 prints the command's own text, unless the words ask for JSON.
  const bool as_text = as_lines && !typed_json;
  if (!as_text && !typed_json) args.push_back("--json");
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector

  Captured captured(std::cout);
  Captured error_text(std::cerr);
  try {
    if (context.pid && is_one_shot(name) && name != "doctor") {
      // The debugger's process, unless the words name another.
      CLI::Option* pid = app.get_subcommand(name)->get_option("--pid");
      pid->required(false);
      pid->default_val(*context.pid);
    }
    app.parse(args);
  } catch (const CLI::CallForHelp& help) {
    std::ostringstream text, errors;
    app.exit(help, text, errors);
    return nlohmann::json{{"help", text.str()}};
  } catch (const CLI::CallForAllHelp& help) {
    std::ostringstream text, errors;
    app.exit(help, text, errors);
    return nlohmann::json{{"help", text.str()}};
  } catch (const CLI::ParseError& parse_error) {
    // What the CLI prints for a usage mistake under --json.
    Envelope envelope;
    envelope.operation = name == "doctor" ? name : is_one_shot(name) ? "live_" + name : "usage";
    envelope.error = usage_error(parse_error, app);
    const int status = error_exit_status(ErrorCode::invalid_argument);
    if (as_text) return nlohmann::json{{"text", {error_line(*envelope.error)}}, {"exit_status", status}};
    return nlohmann::json{{"document", envelope_json(envelope)}, {"exit_status", status}};
  } catch (const std::exception& failure) {
    return cli_error(make_error(ErrorCode::internal, std::string("xref ") + name + " failed: " + failure.what()));
  }
  if (as_text) {
    // What the shell shows: the output, then the error line.
    std::vector<std::string> lines = lines_of(captured.text());
    for (std::string& line : lines_of(error_text.text())) lines.push_back(std::move(line));
    return nlohmann::json{{"text", lines}, {"exit_status", exit_status}};
  }
  auto document = last_document(captured.text());
  if (as_lines) {
    if (!document) return cli_error(make_error(ErrorCode::internal, "xref " + name + " printed no JSON document"));
    return nlohmann::json{{"document", *document}, {"text", lines_of(document->dump(2))}, {"exit_status", exit_status}};
  }
  if (!document) {
    return cli_error(make_error(ErrorCode::internal, "xref " + name + " printed no JSON document"));
  }
  return nlohmann::json{{"document", std::move(*document)}, {"exit_status", exit_status}};
}

}  // namespace xref::serve
