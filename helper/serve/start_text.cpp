#include "serve/start_text.h"

#include "render/duration.h"

#include <algorithm>
#include <map>

#include "probe_abi.h"
#include "render/json_fields.h"
#include "render/place_text.h"
#include "serve/watch_prepare.h"
#include "sites/breakpoints.h"

namespace xref::serve {
namespace {

std::string plural(uint64_t count, const std::string& word) {
  return std::to_string(count) + " " + word + (count == 1 ? "" : (word.back() == 's' ? "es" : "s"));
}

std::string numbers(const std::vector<uint64_t>& ids) {
  std::string text;
  for (uint64_t id : ids) text += (text.empty() ? "" : ", ") + std::to_string(id);
  return text;
}

// Identical warnings once, with how many times.
void warning_lines(const nlohmann::json& warnings, std::vector<std::string>& lines) {
  std::vector<std::pair<std::string, size_t>> counted;
  for (const nlohmann::json& warning : warnings) {
    if (!warning.is_string()) continue;
    auto same = std::find_if(counted.begin(), counted.end(), [&](const auto& seen) { return seen.first == warning; });
    if (same != counted.end()) ++same->second;
    else counted.emplace_back(warning.get<std::string>(), 1);
  }
  for (const auto& [text, count] : counted) {
    lines.push_back("xref: warning: " + text + (count > 1 ? " (" + std::to_string(count) + " times)" : ""));
  }
}

}  // namespace

nlohmann::json preparation(const SessionSpec& spec, const DebuggerContext& debugger) {
  nlohmann::json prepare = nlohmann::json::object();
  std::vector<uint64_t> disable;
  if (spec.command == "trace") {
    if (auto id = breakpoint_reference(spec.options.request.start)) disable.push_back(*id);
    const auto& here = debugger.here;
    if (spec.options.request.here && here) {
      // The breakpoint the thread stopped at, in case the trace probes it.
      std::vector<uint64_t> at_pc;
      for (const DebuggerBreakpoint& breakpoint : debugger.breakpoints) {
        if (!breakpoint.enabled) continue;
        for (const DebuggerBreakpointLocation& location : breakpoint.locations) {
          if (location.enabled && location.address == here->pc) at_pc.push_back(breakpoint.id);
        }
      }
      std::sort(at_pc.begin(), at_pc.end());
      at_pc.erase(std::unique(at_pc.begin(), at_pc.end()), at_pc.end());
      if (!at_pc.empty()) prepare["disable_quietly"] = at_pc;
    }
    if (spec.options.request.stop_at_end) prepare["stop_at_end"] = true;
  } else if (spec.command == "watch") {
    // The debugger evaluates the expressions; its answers are the ranges.
    if (nlohmann::json evaluate = watch_evaluate_list(spec); !evaluate.empty()) prepare["evaluate"] = evaluate;
    if (!spec.watch.request.stop_when.empty()) prepare["stop_signal"] = XREF_PROBE_STOP_SIGNAL;
  } else {
    for (const std::string& address : spec.probe.request.addresses) {
      if (auto id = breakpoint_reference(address)) disable.push_back(*id);
    }
    if (!spec.probe.request.stop_when.empty()) prepare["stop_signal"] = XREF_PROBE_STOP_SIGNAL;
  }
  std::sort(disable.begin(), disable.end());
  disable.erase(std::unique(disable.begin(), disable.end()), disable.end());
  if (!disable.empty()) prepare["disable_breakpoints"] = disable;
  return prepare;
}

std::string event_function(render::Names& names, const nlohmann::json& event) {
  render::CodeAddress address;
  address.live = render::address_at(event, "target_live");
  if (address.live) {
    if (auto place = names.place(address); place && !place->function.empty()) return place->function;
  }
  const std::string symbol = event.value("symbol", std::string());
  return symbol.empty() ? "?" : symbol;
}

std::optional<ProtocolError> check_prepared(const nlohmann::json& prepared) {
  if (!prepared.is_object() || !prepared.contains("stop_at_end")) return std::nullopt;
  const nlohmann::json& stop = prepared["stop_at_end"];
  if (!stop.is_object() || !render::address_value(stop.value("address", nlohmann::json()))) {
    return protocol_error("invalid_request",
                          "prepared.stop_at_end.address must be the live return address, \"0x...\": got " +
                              (stop.is_object() ? stop.value("address", nlohmann::json()).dump() : stop.dump()),
                          "the front end's temporary breakpoint report is malformed");
  }
  return std::nullopt;
}

nlohmann::json stop_signal_field(const std::string& stop_when) {
  return stop_when.empty() ? nlohmann::json(nullptr) : nlohmann::json(XREF_PROBE_STOP_SIGNAL);
}

std::vector<std::string> start_text(const std::string& command, pid_t pid, const nlohmann::json& started,
                                    const nlohmann::json& prepared, render::Names& names) {
  std::vector<std::string> lines;
  const uint64_t id = started.value("session", uint64_t{0});
  const std::string backend = started.value("backend", std::string("?"));
  const std::string session = "xref: session " + std::to_string(id);
  if (command == "trace") {
    lines.push_back(session + " tracing PID " + std::to_string(pid) + ": " +
                    plural(started.value("probes", uint64_t{0}), "probe") + " in " +
                    plural(started.value("functions", uint64_t{0}), "function") + " (" + backend +
                    "); windows print at the next stop (xref show)");
    if (started.contains("here_window") && started["here_window"].is_number_unsigned()) {
      const std::string thread = prepared.contains("here_tid") ? std::to_string(prepared["here_tid"].get<uint64_t>())
                                                                 : std::string("the selected one");
      lines.push_back("xref: window " + std::to_string(started["here_window"].get<uint64_t>()) + " is open on thread " +
                      thread + " until the selected frame (CFA " +
                      started.value("here_cfa", std::string("?")) + ") returns");
    }
  } else if (command == "watch") {
    const nlohmann::json ranges = started.value("ranges", nlohmann::json::array());
    std::string how = backend;
    if (backend == "stores") how += ", " + plural(started.value("sites", uint64_t{0}), "uprobe");
    lines.push_back(session + " watching PID " + std::to_string(pid) + ": " + plural(ranges.size(), "range") + " (" +
                    how + "); writes print at each stop (xref show)");
    for (const nlohmann::json& range : ranges) {
      const uint64_t length = range.value("length", uint64_t{0});
      lines.push_back("  [" + std::to_string(range.value("index", uint64_t{0})) + "] " +
                      range.value("spelled", std::string("?")) + "  " + range.value("address", std::string("?")) + "  " +
                      plural(length, "byte"));
    }
    if (const std::string reason = started.value("backend_reason", std::string()); !reason.empty()) {
      lines.push_back("xref: " + backend + ": " + reason);
    }
  } else if (command == "profile") {
    const uint64_t duration_ms = started.value("duration_ms", uint64_t{0});
    const std::string until = duration_ms == 0 ? std::string("until the next stop")
                                               : "for " + render::duration_text(duration_ms * 1000000) +
                                                     " or until the next stop";
    lines.push_back(session + " profiling PID " + std::to_string(pid) + ": " + backend + " at " +
                    std::to_string(started.value("frequency_hz", uint64_t{0})) + " Hz on " +
                    plural(started.value("threads", uint64_t{0}), "thread") + ", callers " +
                    started.value("callers", std::string("?")) + ", " + until +
                    "; the hottest functions print then (capture: " + started.value("out", std::string("?")) + ")");
  } else {
    const size_t addresses = started.value("addresses", nlohmann::json::array()).size();
    lines.push_back(session + " probing PID " + std::to_string(pid) + ": " + plural(addresses, "address") + " at " +
                    plural(started.value("sites", uint64_t{0}), "site") + " (" + backend +
                    "); counts print at each stop (xref show)");
  }
  warning_lines(started.value("warnings", nlohmann::json::array()), lines);
  std::vector<uint64_t> kept;
  for (const nlohmann::json& number : started.value("breakpoints_to_disable", nlohmann::json::array())) {
    if (number.is_number_unsigned()) kept.push_back(number.get<uint64_t>());
  }
  if (!kept.empty()) {
    lines.push_back("xref: breakpoint" + std::string(kept.size() == 1 ? " " : "s ") + numbers(kept) + " disabled while the " +
                    command + " is armed: a uprobe at the same address would swallow it; re-enabled when the " +
                    command + " ends");
  }
  if (prepared.contains("stop_at_end") && prepared["stop_at_end"].is_object()) {
    const nlohmann::json& stop = prepared["stop_at_end"];
    const auto live = render::address_at(stop, "address");
    const std::string where = live ? render::known_place_text(names, {"", std::nullopt, live}) : std::string();
    lines.push_back("xref: breakpoint " + std::to_string(stop.value("breakpoint", 0)) + " (temporary, thread " +
                    std::to_string(stop.value("thread", 0)) + ") at the return address " +
                    stop.value("address", std::string("?")) + (where.empty() ? "" : " (" + where + ")") +
                    " stops the process when the window closes");
  }
  if (started.contains("stop_signal") && started["stop_signal"].is_number_integer()) {
    const int signal = started["stop_signal"].get<int>();
    // The front end says how its debugger catches the signal, and what
    // becomes of the program's own.
    std::string how = "the debugger stops there";
    std::string own = "the program's own signal " + std::to_string(signal) + " still reaches it";
    if (prepared.contains("stop_signal") && prepared["stop_signal"].is_object()) {
      const std::string by = prepared["stop_signal"].value("by", std::string());
      if (!by.empty()) how = by + " stops there";
      const std::string theirs = prepared["stop_signal"].value("own", std::string());
      if (!theirs.empty()) own = theirs;
    }
    lines.push_back("xref: the first " + std::string(command == "watch" ? "write" : "hit") + " where --stop-when holds stops its thread with signal " + std::to_string(signal) +
                    " (SIGRTMAX-1): " + how + " and keeps it from the process; " + own);
  }
  return lines;
}

}  // namespace xref::serve
