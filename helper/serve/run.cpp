// Protocol 2's `run`: a debugger's `xref WORDS...` as the helper answers it,
// with the text the front end prints (docs/protocol.md, "Protocol 2").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "output/report.h"
#include "render/json_fields.h"
#include "render/place_text.h"
#include "serve/command.h"
#include "serve/context.h"
#include "serve/frontend_commands.h"
#include "serve/profile_offline.h"
#include "serve/server.h"
#include "serve/session_request.h"
#include "serve/start_text.h"
#include "serve/watch_prepare.h"
#include "sites/breakpoints.h"

namespace xref::serve {
namespace {

// New windows printed at one stop; `xref show` prints the rest.
constexpr size_t kWindowsPerStop = 20;
// How long a stop waits for the sessions its drain found at their bound
// to end (they detach their probes first).
constexpr auto kEndingWait = std::chrono::seconds(15);

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

nlohmann::json text_result(std::vector<std::string> lines, nlohmann::json extra = nlohmann::json::object()) {
  extra["text"] = std::move(lines);
  return extra;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : " ") + word;
  return text;
}

std::variant<std::vector<std::string>, ProtocolError> run_words(const nlohmann::json& params) {
  const auto argv = params.find("argv");
  if (argv == params.end() || argv->is_null()) return std::vector<std::string>{};
  if (!argv->is_array()) return protocol_error("invalid_request", "params.argv must be an array of strings");
  std::vector<std::string> words;
  for (const nlohmann::json& word : *argv) {
    if (!word.is_string()) return protocol_error("invalid_request", "params.argv must be an array of strings");
    words.push_back(word.get<std::string>());
  }
  return words;
}

uint64_t stop_time(const nlohmann::json& params) {
  const auto at = params.find("stopped_at_ns");
  if (at != params.end() && at->is_number_unsigned()) return at->get<uint64_t>();
  return monotonic_now_ns();
}

}  // namespace

nlohmann::json with_text(nlohmann::json response) {
  auto error = response.find("error");
  if (error == response.end() || !error->is_object()) return response;
  std::string line = "xref: " + error->value("message", std::string("failed"));
  const int column = error->value("column", 0);
  if (column > 0) line += " (column " + std::to_string(column) + ")";
  const std::string hint = error->value("hint", "");
  if (!hint.empty()) line += "; " + hint;
  (*error)["text"] = line;
  return response;
}

nlohmann::json Server::run(const Request& request) {
  auto parsed_words = run_words(request.params);
  if (auto* error = std::get_if<ProtocolError>(&parsed_words)) return error_response(request.id, *error);
  auto words = std::get<std::vector<std::string>>(parsed_words);
  auto context = parse_context(request.params);
  if (auto* error = std::get_if<ProtocolError>(&context)) return with_text(error_response(request.id, *error));
  const RequestContext& here = std::get<RequestContext>(context);
  // The front end says since when the process sits stopped at its prompt
  // (with every request while it is stopped): window durations leave it out.
  if (here.pid && request.params.contains("stopped_at_ns")) display_.stops().stopped(*here.pid, stop_time(request.params));
  if (words.empty() || words[0] == "help" || words[0] == "--help" || words[0] == "-h") {
    return result_response(request.id, text_result(split_lines(overall_help())));
  }
  const std::string& command = words[0];
  if (is_profile_offline(words)) {
    auto result = run_profile_offline(words, sessions_.captures());
    if (auto* error = std::get_if<ProtocolError>(&result)) return with_text(error_response(request.id, *error));
    nlohmann::json answer = std::get<nlohmann::json>(result);
    if (answer.contains("help")) return result_response(request.id, text_result(split_lines(answer["help"])));
    return result_response(request.id, std::move(answer));
  }
  const bool needs_process = command == "trace" || command == "probe" || command == "watch" || command == "profile" ||
                             command == "maps" || command == "resolve" || command == "memscan";
  const bool asks_help = std::find_if(words.begin(), words.end(), [](const std::string& word) {
                           return word == "--help" || word == "-h";
                         }) != words.end();
  const bool names_pid = std::find_if(words.begin(), words.end(), [](const std::string& word) {
                           return word == "--pid" || word == "-p" || word.rfind("--pid=", 0) == 0;
                         }) != words.end();
  if (needs_process && !asks_help && !names_pid && !here.pid) {
    return with_text(error_response(
        request.id, cli_error(make_error(ErrorCode::invalid_argument, "no live process",
                                         "`run` or `attach` first, or name one with --pid"))));
  }
  if (command == "trace" || command == "probe" || command == "watch" || command == "profile") {
    return run_session_start(request, words, here);
  }
  if (command == "maps" || command == "resolve" || command == "memscan" || command == "doctor") {
    auto result = run_one_shot(words, here, /*text=*/true);
    if (auto* error = std::get_if<ProtocolError>(&result)) return with_text(error_response(request.id, *error));
    nlohmann::json answer = std::get<nlohmann::json>(result);
    if (answer.contains("help")) return result_response(request.id, text_result(split_lines(answer["help"])));
    return result_response(request.id, std::move(answer));
  }
  auto parsed = parse_frontend_command(words);
  if (auto* error = std::get_if<ProtocolError>(&parsed)) return with_text(error_response(request.id, *error));
  if (auto* help = std::get_if<HelpText>(&parsed)) return result_response(request.id, text_result(split_lines(help->text)));
  const FrontendCommand& chosen = std::get<FrontendCommand>(parsed);
  if (chosen.name == "show") return run_show(request, chosen, here);
  if (chosen.name == "sessions") return result_response(request.id, text_result(display_.sessions_table(sessions_.list())));
  if (chosen.name == "stop") return run_stop(request, chosen);
  return run_break(request, chosen);
}

nlohmann::json Server::run_session_start(const Request& request, const std::vector<std::string>& words,
                                         const RequestContext& context) {
  auto parsed = parse_session_start(words, context);
  if (auto* error = std::get_if<ProtocolError>(&parsed)) return with_text(error_response(request.id, *error));
  if (auto* help = std::get_if<HelpText>(&parsed)) return result_response(request.id, text_result(split_lines(help->text)));
  SessionSpec spec = std::move(std::get<SessionSpec>(parsed));

  // What the debugger must do before the probes go in (docs/protocol.md).
  const nlohmann::json prepare = preparation(spec, context.debugger);
  const auto prepared = request.params.find("prepared");
  const bool is_prepared = prepared != request.params.end() && prepared->is_object();
  if (is_prepared) {
    if (auto malformed = check_prepared(*prepared)) return with_text(error_response(request.id, *malformed));
  }
  if (!prepare.empty() && !is_prepared) return result_response(request.id, {{"prepare", prepare}});
  if (is_prepared) {
    if (auto refused = apply_watch_evaluations(spec, *prepared)) return with_text(error_response(request.id, *refused));
  }

  const pid_t pid = spec.process().pid;
  const std::string command = spec.command;
  const std::string typed = joined(words);
  nlohmann::json done = is_prepared ? *prepared : nlohmann::json::object();
  if (context.debugger.here) done["here_tid"] = context.debugger.here->tid;
  writer_.transform_response(request.id, [this, pid, command, typed, done](nlohmann::json response) {
    if (!response.contains("result")) return with_text(std::move(response));
    nlohmann::json& started = response["result"];
    const uint64_t id = started.value("session", uint64_t{0});
    display_.started(id, command, pid, typed, started);
    auto names = names_.names_for(pid);
    // The helper's names of the probed modules, read while the process runs:
    // they still name its addresses once it exited.
    for (const nlohmann::json& site : started.value("probe_sites", nlohmann::json::array())) {
      if (auto live = render::address_value(site)) names->place({"", std::nullopt, live});
    }
    std::vector<std::string> lines = start_text(command, pid, started, done, *names);
    nlohmann::json session = {{"id", id},
                              {"command", command},
                              {"pid", pid},
                              {"backend", started.value("backend", nlohmann::json())},
                              {"probe_sites", started.value("probe_sites", nlohmann::json::array())},
                              {"breakpoints_to_disable", started.value("breakpoints_to_disable", nlohmann::json::array())},
                              {"stop_signal", started.value("stop_signal", nlohmann::json())},
                              {"here_window", started.value("here_window", nlohmann::json())}};
    return result_response(response["id"], text_result(std::move(lines), {{"session", session}}));
  });
  if (auto refused = sessions_.start(request.id, std::move(spec))) {
    return error_response(request.id, *refused);  // through the transform: it adds the text
  }
  return nullptr;
}

nlohmann::json Server::shown_answer(const Display::Selection& selection, bool json, bool at_stop,
                                    const nlohmann::json& params) {
  const bool ask = debugger_names_ && !json && params.value("names", std::string()) != "helper";
  if (ask) {
    auto missing = display_.unnamed(selection, names_);
    if (!missing.empty()) {
      nlohmann::json needed = nlohmann::json::array();
      for (const auto& [pid, addresses] : missing) {
        nlohmann::json lives = nlohmann::json::array();
        for (uint64_t live : addresses) lives.push_back(hex_value(live));
        needed.push_back({{"pid", pid}, {"addresses", lives}});
      }
      return {{"names_needed", needed}};
    }
  }
  Display::Shown shown = json ? display_.show_json(selection) : display_.show(selection, names_);
  if (!at_stop && !json && shown.lines.empty()) {
    const size_t running = sessions_.list()["sessions"].size();
    shown.lines.push_back("xref: nothing new (" + std::to_string(running) + " session" + (running == 1 ? "" : "s") +
                          " running; `xref show --all` prints what was shown before)");
  }
  return text_result(std::move(shown.lines), {{"ended", shown.ended}});
}

nlohmann::json Server::run_show(const Request& request, const FrontendCommand& show, const RequestContext& context) {
  const bool at_stop = request.params.value("at_stop", false);
  if (show.session && !display_.known(*show.session)) {
    return with_text(error_response(
        request.id, protocol_error("unknown_session", "no session " + std::to_string(*show.session),
                                   "`xref sessions` lists them")));
  }
  Display::Selection selection;
  selection.session = show.session;
  selection.all = show.all;
  selection.window_limit = at_stop ? kWindowsPerStop : 0;
  selection.peek = request.params.value("peek", false);
  selection.at_stop = at_stop;
  for (const DebuggerBreakpoint& breakpoint : context.debugger.breakpoints) {
    for (const DebuggerBreakpointLocation& location : breakpoint.locations) {
      if (breakpoint.enabled && location.enabled) selection.breakpoints[location.address].push_back(static_cast<int>(breakpoint.id));
    }
  }
  const bool json = show.json;
  const nlohmann::json params = request.params;
  // The same show again once the debugger named what it asked for: what it
  // drained then is still unshown, and a second drain would split it.
  if (request.params.value("named", false)) return result_response(request.id, shown_answer(selection, json, at_stop, params));
  // First every running session sends what closed before the stop; those
  // it found at a bound end a moment later, with their last windows.
  writer_.transform_response(request.id, [this, selection, json, at_stop, params](nlohmann::json drained) {
    std::vector<uint64_t> ending;
    if (drained.contains("result")) {
      for (const nlohmann::json& id : drained["result"].value("ending", nlohmann::json::array())) {
        if (id.is_number_unsigned()) ending.push_back(id.get<uint64_t>());
      }
    }
    const nlohmann::json id = drained["id"];
    if (ending.empty()) return result_response(id, shown_answer(selection, json, at_stop, params));
    deferred_.post([this, id, ending, selection, json, at_stop, params] {
      const auto deadline = std::chrono::steady_clock::now() + kEndingWait;
      while (std::chrono::steady_clock::now() < deadline &&
             !std::all_of(ending.begin(), ending.end(), [this](uint64_t one) { return display_.ended(one); })) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      writer_.write(result_response(id, shown_answer(selection, json, at_stop, params)));
    });
    return nlohmann::json();
  });
  // At a stop, profile sessions end: their samples are the time the process ran.
  return sessions_.drain(request.id, at_stop).value_or(nullptr);
}

nlohmann::json Server::run_stop(const Request& request, const FrontendCommand& stop) {
  const nlohmann::json live = sessions_.list()["sessions"];
  std::vector<uint64_t> running;
  for (const nlohmann::json& entry : live) running.push_back(entry.value("session", uint64_t{0}));
  std::vector<uint64_t> chosen;
  if (stop.all) {
    chosen = running;
  } else if (stop.session) {
    if (!display_.known(*stop.session)) {
      return with_text(error_response(request.id, protocol_error("unknown_session", "no session " + std::to_string(*stop.session),
                                                                 "`xref sessions` lists them")));
    }
    if (std::find(running.begin(), running.end(), *stop.session) == running.end()) {
      return with_text(error_response(
          request.id, protocol_error("unknown_session", "session " + std::to_string(*stop.session) + " has already ended",
                                     "`xref show --session " + std::to_string(*stop.session) + " --all` prints what it found")));
    }
    chosen = {*stop.session};
  } else if (running.size() > 1) {
    return with_text(error_response(
        request.id, protocol_error("invalid_request", "several sessions run: name one, or --all",
                                   "`xref sessions` lists them")));
  } else {
    chosen = running;
  }
  if (chosen.empty()) {
    return result_response(request.id, text_result({"xref: no running session"}, {{"ended", nlohmann::json::array()}}));
  }
  auto remaining = std::make_shared<std::atomic<size_t>>(chosen.size());
  const nlohmann::json id = request.id;
  const nlohmann::json params = request.params;
  for (uint64_t session : chosen) {
    // Each session answers after its session_ended; the last answer renders.
    const nlohmann::json internal = {{"stop", id}, {"session", session}};
    writer_.transform_response(internal, [this, remaining, id, chosen, params](nlohmann::json) {
      if (remaining->fetch_sub(1) == 1) {
        nlohmann::json lines = nlohmann::json::array();
        nlohmann::json ended = nlohmann::json::array();
        nlohmann::json needed = nlohmann::json::array();
        for (uint64_t one : chosen) {
          Display::Selection selection;
          selection.session = one;
          selection.at_stop = true;  // what changed since the last stop, then how it ended
          nlohmann::json shown = shown_answer(selection, false, true, params);
          if (shown.contains("names_needed")) {
            for (auto& entry : shown["names_needed"]) needed.push_back(entry);
            continue;
          }
          for (auto& line : shown["text"]) lines.push_back(line);
          for (auto& entry : shown["ended"]) ended.push_back(entry);
        }
        nlohmann::json result = {{"text", lines}, {"ended", ended}};
        // The rest prints once the front end named its addresses.
        if (!needed.empty()) result.update({{"names_needed", needed}, {"next_argv", {"show"}}});
        writer_.write(result_response(id, result));
      }
      return nlohmann::json();
    });
    if (auto now = sessions_.stop(session, internal)) writer_.write(*now);
  }
  return nullptr;
}

nlohmann::json Server::run_break(const Request& request, const FrontendCommand& command) {
  auto found = display_.event_place(command.window, command.seq, command.session);
  if (auto* why = std::get_if<std::string>(&found)) {
    return with_text(error_response(request.id, protocol_error("invalid_argument", *why)));
  }
  const Display::EventPlace& place = std::get<Display::EventPlace>(found);
  const std::string reference = std::to_string(command.window) + ":" + std::to_string(command.seq);
  if (place.running && place.probe_live == place.live) {
    // A debugger int3 over a probe's would outlive the probe.
    return with_text(error_response(
        request.id, protocol_error("invalid_argument",
                                   "session " + std::to_string(place.session) + " has a probe at " + hex_value(place.live) +
                                       ": a breakpoint there would be swallowed",
                                   "`xref stop " + std::to_string(place.session) + "` first")));
  }
  const pid_t pid = display_pid(place.session);
  if (debugger_names_ && request.params.value("names", std::string()) != "helper" && !names_.has(pid, place.live)) {
    return result_response(request.id, {{"names_needed", {{{"pid", pid}, {"addresses", {hex_value(place.live)}}}}}});
  }
  auto names = names_.names_for(pid);
  const std::string where = render::known_place_text(*names, {"", std::nullopt, place.live});
  const std::string function = event_function(*names, place.event);
  // {number} is the debugger's number of the breakpoint it sets.
  const std::string line = "Breakpoint {number}: " + hex_value(place.live) + (where.empty() ? "" : " " + where) + " (" +
                           place.what + " " + function + ", event " + reference + ")";
  return result_response(request.id, {{"set_breakpoint", {{"address", hex_value(place.live)}, {"session", place.session}}},
                                      {"text", nlohmann::json::array()},
                                      {"text_after", {line}}});
}

}  // namespace xref::serve
