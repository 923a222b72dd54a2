#include "serve/frontend_commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <set>

#include "command/option_values.h"
#include "command/usage_text.h"
#include "number_parse.h"
#include "probe/commands.h"
#include "profile/commands.h"
#include "serve/profile_options.h"
#include "serve/commands.h"
#include "trace/commands.h"
#include "watch/commands.h"

namespace xref::serve {
namespace {

struct FrontendOptions {
  uint64_t session = 0;
  bool all = false, json = false;
  std::string reference;
};

// One CLI11 app per debugger-only command.
void add_frontend_command(CLI::App& app, const std::string& name, FrontendOptions& options) {
  if (name == "show") {
    app.description("print what sessions found since it was last shown (it also prints by itself at each stop)");
    app.add_option("--session", options.session, "only this session");
    app.add_flag("--all", options.all, "everything kept, shown before or not; each probe's whole result so far");
    app.add_flag("--json", options.json,
                 "one JSON line per window ({\"session\", \"window\"}) and per probe ({\"session\", \"document\"})");
  } else if (name == "sessions") {
    app.description("list the sessions started from this debugger");
  } else if (name == "stop") {
    app.description("stop sessions: detach their probes, give back breakpoints, print what they found last");
    app.add_option("session", options.session, "the session (the only running one when omitted)");
    app.add_flag("--all", options.all, "every running session");
  } else if (name == "break") {
    app.description("set a breakpoint where a traced event happened (W:SEQ, the first column of a window)");
    app.add_option("event", options.reference, "W:SEQ: window W, event SEQ")->required();
    app.add_option("--session", options.session, "the session of window W");
  }
}

const std::vector<std::string>& frontend_names() {
  static const std::vector<std::string> names = {"show", "sessions", "stop", "break"};
  return names;
}

// Every command's CLI11 definition, for help and completion.
struct AllCommands {
  CLI::App app{"xref: what a process does next, in order, without stopping it", "xref"};
  int exit_status = 0;
  std::map<std::string, FrontendOptions> frontend;
  DebuggerProfileOptions profile_options;
  AllCommands() {
    setup_trace(app, exit_status);
    setup_probe(app, exit_status);
    setup_watch(app, exit_status);
    CLI::App* profile = app.add_subcommand("profile", kProfileSessionDescription);
    add_profile_session_options(*profile, profile_options);
    setup_profile_offline(*profile, exit_status);
    for (const std::string& name : frontend_names()) {
      add_frontend_command(*app.add_subcommand(name), name, frontend[name]);
    }
    setup_one_shot_commands(app, exit_status);
  }
};

ProtocolError usage(const std::string& message, const std::string& hint) {
  return cli_error(make_error(ErrorCode::invalid_argument, message, hint));
}

}  // namespace

std::variant<FrontendCommand, HelpText, ProtocolError> parse_frontend_command(const std::vector<std::string>& words) {
  const std::string& name = words.front();
  if (std::find(frontend_names().begin(), frontend_names().end(), name) == frontend_names().end()) {
    std::string hint = "`xref help` lists the commands";
    AllCommands all;
    std::string best;
    size_t best_distance = 3;
    for (const CLI::App* sub : all.app.get_subcommands({})) {
      const size_t distance = edit_distance(sub->get_name(), name);
      if (distance < best_distance) best_distance = distance, best = sub->get_name();
    }
    if (!best.empty()) hint = "did you mean `xref " + best + "`? " + hint;
    return usage("no command named '" + name + "'", hint);
  }
  FrontendOptions options;
  CLI::App app{"", "xref " + name};
  add_frontend_command(app, name, options);
  std::vector<std::string> args(words.begin() + 1, words.end());
  std::reverse(args.begin(), args.end());
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return HelpText{app.help()};
  } catch (const CLI::ParseError& error) {
    return cli_error(usage_error(error, "see `xref " + name + " --help`"));
  }
  FrontendCommand command;
  command.name = name;
  if (app.get_option_no_throw("--session") && app.get_option("--session")->count() > 0) command.session = options.session;
  if (name == "stop" && app.get_option("session")->count() > 0) command.session = options.session;
  command.all = options.all;
  command.json = options.json;
  if (name == "stop" && command.all && command.session) return usage("give a session or --all, not both", "xref stop [N | --all]");
  if (name == "break") {
    const size_t colon = options.reference.find(':');
    auto window = parse_u64(options.reference.substr(0, colon), "window");
    auto seq = colon == std::string::npos ? Result<uint64_t>(make_error(ErrorCode::invalid_argument, ""))
                                          : parse_u64(options.reference.substr(colon + 1), "event");
    if (!window || !seq) {
      return usage("'" + options.reference + "' is not W:SEQ",
                   "window:event, as the first column of a window prints it (`xref show`)");
    }
    command.window = *window;
    command.seq = *seq;
  }
  return command;
}

std::string overall_help() {
  AllCommands all;
  std::string text = "xref: what a process does next, in order, without stopping it\n\n";
  for (const CLI::App* sub : all.app.get_subcommands({})) {
    std::string name = sub->get_name();
    name.resize(std::max<size_t>(name.size(), 10), ' ');
    text += "  xref " + name + "  " + sub->get_description() + "\n";
  }
  text += "\n`xref COMMAND --help` shows a command's options.\n";
  return text;
}

bool takes_code(const std::string& command, const std::string& option) {
  static const std::vector<std::string> code_options = {"--start", "--functions", "--callees-of", "--all-calls-in",
                                                        "--stop", "--stop-return", "--fetch-at", "--fetch-ret"};
  if (command == "trace") return std::find(code_options.begin(), code_options.end(), option) != code_options.end();
  return command == "probe" && option.empty();  // a probe's addresses
}

Completion complete_words(const std::vector<std::string>& words, const std::string& partial) {
  AllCommands all;
  Completion completion;
  auto add = [&](const std::string& candidate) {
    if (candidate.rfind(partial, 0) == 0) completion.candidates.push_back(candidate);
  };
  if (words.empty()) {
    for (const CLI::App* sub : all.app.get_subcommands({})) add(sub->get_name());
    add("help");
    std::sort(completion.candidates.begin(), completion.candidates.end());
    return completion;
  }
  CLI::App* sub = nullptr;
  try {
    sub = all.app.get_subcommand(words.front());
  } catch (const CLI::Error&) {
    return completion;
  }
  // `profile report ...`: the options are the subcommand's. (trace's
  // subcommands read saved traces: the shell's, not a debugger's.)
  const bool runs_subcommands = words.front() == "profile";
  if (runs_subcommands && words.size() > 1) {
    for (CLI::App* nested : sub->get_subcommands({})) {
      if (nested->get_name() == words[1]) sub = nested;
    }
  } else if (runs_subcommands && partial.rfind("-", 0) != 0) {
    for (const CLI::App* nested : sub->get_subcommands({})) add(nested->get_name());
    std::sort(completion.candidates.begin(), completion.candidates.end());
  }
  // The option before the word being completed, if it takes a value.
  const CLI::Option* previous = nullptr;
  if (words.size() > 1 && words.back().rfind("-", 0) == 0) {
    previous = sub->get_option_no_throw(words.back());
    if (previous && previous->get_expected_min() == 0) previous = nullptr;
  }
  const bool positional_code = takes_code(words.front(), "");  // a probe's addresses
  if (previous) {
    for (const std::string& name : previous->get_lnames()) {
      if (takes_code(words.front(), "--" + name)) completion.wants_function = "--" + name;
    }
    return completion;
  }
  if (partial.rfind("-", 0) == 0) {
    std::set<std::string> described;
    auto describe = [&](const CLI::Option* option, bool candidate) {
      const std::vector<std::string>& shorts = option->get_snames();
      for (const std::string& name : option->get_lnames()) {
        if (candidate) add("--" + name);
        if (("--" + name).rfind(partial, 0) != 0 || !described.insert(name).second) continue;
        completion.options.push_back({{"name", "--" + name},
                                      {"short", shorts.empty() ? "" : shorts.front()},
                                      {"values", std::max(option->get_items_expected_min(), 0)},
                                      {"code", takes_code(words.front(), "--" + name)},
                                      {"help", option->get_description()}});
      }
    };
    for (const CLI::Option* option : sub->get_options()) describe(option, true);
    // A debugger that declares options up front (LLDB) declares those of
    // the subcommands (`profile report --by`) with the command's.
    if (runs_subcommands && words.size() == 1) {
      for (const CLI::App* nested : sub->get_subcommands({})) {
        for (const CLI::Option* option : nested->get_options()) describe(option, false);
      }
    }
    completion.positional_code = positional_code;
    std::sort(completion.candidates.begin(), completion.candidates.end());
    completion.candidates.erase(std::unique(completion.candidates.begin(), completion.candidates.end()),
                                completion.candidates.end());
    return completion;
  }
  if (positional_code) completion.wants_function = "";
  return completion;
}

}  // namespace xref::serve
