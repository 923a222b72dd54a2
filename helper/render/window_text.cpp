#include "render/window_text.h"

#include <algorithm>

#include "hex.h"
#include "output/json_envelope.h"
#include "render/columns.h"
#include "render/duration.h"
#include "render/fetch_text.h"
#include "render/json_fields.h"
#include "render/name_labels.h"
#include "render/place_text.h"

namespace xref::render {
namespace {

CodeAddress event_address(const nlohmann::json& event, std::string_view role) {
  const std::string prefix(role);
  // A call site's module is its own (absent: the executable), not the callee's.
  std::string module = role == "call_site" ? text_at(event, "call_site_module") : text_at(event, "module");
  return {std::move(module), address_at(event, prefix + "_va"), address_at(event, prefix + "_live")};
}

bool is_end(const std::string& kind) { return kind == "return" || kind == "tail_exit" || kind == "unwound"; }

// The calls of a window: which event ends each entry, and its traced children.
struct Calls {
  std::vector<std::optional<size_t>> end_of;        // per entry event
  std::vector<std::optional<size_t>> entry_of;      // per ending event
  std::vector<std::vector<size_t>> children;        // per entry event: entries one level down
  std::vector<bool> child_left_open;                // some child did not end in the window
};

Calls match_calls(const nlohmann::json& events) {
  Calls calls;
  const size_t count = events.size();
  calls.end_of.resize(count);
  calls.entry_of.resize(count);
  calls.children.resize(count);
  calls.child_left_open.resize(count, false);
  std::vector<std::optional<size_t>> open;  // by depth
  for (size_t i = 0; i < count; ++i) {
    const std::string kind = text_at(events[i], "kind");
    const size_t depth = count_or_zero(events[i], "depth");
    if (depth >= open.size()) open.resize(depth + 1);
    if (kind == "entry") {
      open[depth] = i;
      if (depth > 0 && open[depth - 1]) calls.children[*open[depth - 1]].push_back(i);
      for (size_t deeper = depth + 1; deeper < open.size(); ++deeper) open[deeper].reset();
    } else if (is_end(kind) && open[depth]) {
      calls.end_of[*open[depth]] = i;
      calls.entry_of[i] = open[depth];
      open[depth].reset();
    }
  }
  for (size_t i = 0; i < count; ++i) {
    for (size_t child : calls.children[i]) {
      if (!calls.end_of[child]) calls.child_left_open[i] = true;
    }
  }
  return calls;
}

uint64_t timestamp(const nlohmann::json& event) { return count_or_zero(event, "timestamp_ns"); }

void add_breakpoints(const WindowStyle& style, const CodeAddress& address, std::vector<int>& ids) {
  if (!address.live) return;
  const auto found = style.breakpoints.find(*address.live);
  if (found == style.breakpoints.end()) return;
  for (int id : found->second) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
}

std::string address_text(const CodeAddress& address, const WindowStyle& style) {
  if (style.live_addresses && address.live) return to_hex(*address.live);
  const std::string text = static_text(address);
  return text.empty() ? "?" : text;
}

}  // namespace

std::vector<StoppedInterval> observed_stops(const std::vector<StoppedInterval>& stops, const nlohmann::json& window) {
  std::vector<StoppedInterval> cut = stops;
  for (const nlohmann::json& event : array_at(window, "events")) {
    // Events the helper made (--here's first, an unwound frame's) have no
    // probe: they say nothing about whether the process ran.
    if (!event.is_object() || !event.contains("probe_va")) continue;
    const uint64_t at = timestamp(event);
    // >=: serve clips a stop that began before the window to its first event.
    for (StoppedInterval& stop : cut) {
      if (at >= stop.begin_ns && at < stop.end_ns) stop.end_ns = at;
    }
  }
  return cut;
}

uint64_t stopped_ns(const std::vector<StoppedInterval>& stops, uint64_t begin_ns, uint64_t end_ns) {
  uint64_t total = 0;
  for (const StoppedInterval& stop : stops) {
    const uint64_t from = std::max(stop.begin_ns, begin_ns), to = std::min(stop.end_ns, end_ns);
    if (to > from) total += to - from;
  }
  return total;
}

std::string window_status_text(const nlohmann::json& window) {
  const std::string status = text_at(window, "status");
  const bool possible_loss = window.is_object() && window.value("possible_loss", false);
  if (status == "complete" && !possible_loss) return "complete";
  std::string why;
  if (status == "truncated") {
    why = "truncated: the start function was called again before it returned";
  } else if (status == "unwound") {
    why = "unwound: the start frame was left by unwinding";
  } else if (status == "open_at_stop") {
    why = "still open when the trace stopped";
  } else if (status == "target_exited") {
    why = "the process exited";
  } else if (status == "unknown") {
    why = "ended, but its end record was lost";
  } else if (status != "incomplete" && status != "complete") {
    why = status;
  }
  if (possible_loss) why += (why.empty() ? "" : ", ") + std::string("events may be missing");
  return "incomplete (" + why + ")";
}

std::string window_mark_text(const nlohmann::json& window) {
  const std::string status = text_at(window, "mark_status");
  if (status.empty()) return "";
  if (status == "matched") {
    return "mark " + json_text(text_at(window, "mark_match")) + (window.value("mark_certain", false) ? "" : "?");
  }
  if (status == "no_match_yet") return "mark (no match yet)";
  if (status == "unreadable") return "mark (unreadable: " + text_at(window, "mark_error") + ")";
  return "mark (" + status + ")";
}

namespace {

// The header with the stops as the window's events bound them (observed_stops).
std::string header_line(const nlohmann::json& window, const WindowStyle& style,
                        const std::vector<StoppedInterval>& stops) {
  const nlohmann::json& events = array_at(window, "events");
  std::string line = "window " + std::to_string(count_or_zero(window, "window_id"));
  if (style.session) line += " (session " + std::to_string(*style.session) + ")";
  line += "  thread " + std::to_string(count_or_zero(window, "tid"));
  line += "  " + window_status_text(window);
  // The time it ran: its duration less the time the process sat stopped in it.
  const uint64_t duration = count_or_zero(window, "duration_ns");
  const uint64_t begin = count_or_zero(window, "start_timestamp_ns");
  const uint64_t stopped = std::min(duration, stopped_ns(stops, begin, begin + duration));
  line += "  ran " + duration_text(duration - stopped);
  if (stopped != 0) line += " (stopped " + duration_text(stopped) + " at the debugger)";
  line += "  " + plural(events.size(), "event");
  if (const uint64_t not_kept = count_or_zero(window, "events_not_kept"); not_kept != 0) {
    line += " (" + std::to_string(not_kept) + " more not kept)";
  }
  const std::optional<uint64_t> lost = count_at(window, "lost_events");
  line += "  lost " + (lost ? std::to_string(*lost) : std::string("?"));
  if (const std::string ended = text_at(window, "ended_in"); !ended.empty()) {
    line += "  ended in " + ended + " (reached by a tail jump)";
  }
  if (window.is_object() && window.value("end_inferred", false)) line += "  end inferred (seen by a later event)";
  if (const std::string values = fetches_text(array_at(window, "start_fetches")); !values.empty()) {
    line += "  " + values;
  }
  if (const std::string mark = window_mark_text(window); !mark.empty()) line += "  " + mark;
  if (style.addresses) {
    const std::string module = text_at(window, "start_module");
    line += "  [start " + (module.empty() ? "" : module + ":") + text_at(window, "start_va") + " stop " +
            text_at(window, "stop_va") + "]";
  }
  return line;
}

}  // namespace

std::string window_header(const nlohmann::json& window, const WindowStyle& style) {
  return header_line(window, style, observed_stops(style.stops, window));
}

std::vector<CodeAddress> window_addresses(const nlohmann::json& window) {
  std::vector<CodeAddress> addresses;
  auto add = [&](const CodeAddress& address) { add_code_address(addresses, address); };
  for (const nlohmann::json& event : array_at(window, "events")) {
    const std::string kind = text_at(event, "kind");
    if (kind == "stop") {
      add(event_address(event, "probe"));
      continue;
    }
    add(event_address(event, "target"));
    if (kind == "entry") add(event_address(event, "call_site"));
  }
  return addresses;
}

std::vector<std::string> window_lines(const nlohmann::json& window, Names& names, const WindowStyle& style) {
  const std::vector<StoppedInterval> stops = observed_stops(style.stops, window);
  std::vector<std::string> lines{header_line(window, style, stops)};
  const nlohmann::json& events = array_at(window, "events");
  const size_t count = events.size();
  const Calls calls = match_calls(events);

  // Names first: the Names' where they know one, else the JSON's symbol.
  std::vector<std::optional<Place>> targets(count);
  std::vector<std::string> symbols(count);
  std::vector<bool> as_spelled(count, false);  // the debugger's spelling: no short label
  for (size_t i = 0; i < count; ++i) {
    const nlohmann::json& event = events[i];
    if (text_at(event, "kind") == "stop") continue;
    targets[i] = names.place(event_address(event, "target"));
    // The Names' spelling of the function that starts there; the JSON's for
    // a GNU IFUNC, whose address is the resolver's (named as the user named it).
    const bool named = targets[i] && !targets[i]->function.empty() && targets[i]->offset == 0 &&
                       text_at(event, "implementation").empty();
    symbols[i] = named ? targets[i]->function : text_at(event, "symbol");
    as_spelled[i] = named && targets[i]->debugger;
    if (symbols[i].empty()) symbols[i] = static_text(event_address(event, "target"));
    if (symbols[i].empty()) symbols[i] = "?";
  }
  const NameLabels labels(symbols);

  // Each call's time: to the event that ended it, less the time stopped in it.
  std::vector<std::string> durations(count);
  std::vector<std::optional<uint64_t>> ran(count);
  std::vector<uint64_t> stopped(count, 0);
  for (size_t i = 0; i < count; ++i) {
    if (!calls.end_of[i]) continue;
    const uint64_t begin = timestamp(events[i]), end = timestamp(events[*calls.end_of[i]]);
    const uint64_t total = end >= begin ? end - begin : 0;
    stopped[i] = std::min(total, stopped_ns(stops, begin, end));
    ran[i] = total - stopped[i];
    durations[i] = duration_text(*ran[i]);
  }
  size_t duration_width = 0, reference_width = 0;
  std::vector<std::string> references(count);
  const std::string window_id = std::to_string(count_or_zero(window, "window_id"));
  for (size_t i = 0; i < count; ++i) {
    duration_width = std::max(duration_width, durations[i].size());
    references[i] = window_id + ":" + std::to_string(count_or_zero(events[i], "seq"));
    reference_width = std::max(reference_width, references[i].size());
  }

  for (size_t i = 0; i < count; ++i) {
    const nlohmann::json& event = events[i];
    const std::string kind = text_at(event, "kind");
    const CodeAddress target = event_address(event, "target"), probe = event_address(event, "probe");
    std::string line = "  ";
    if (style.references) line += pad_right(references[i], reference_width) + "  ";
    if (duration_width != 0) line += pad_left(durations[i], duration_width) + "  ";
    line += std::string(2 * count_or_zero(event, "depth"), ' ');
    const bool indirect = event.value("indirect", false);
    std::string name = indirect || as_spelled[i] ? symbols[i] : labels(symbols[i]);
    if (const std::string implementation = text_at(event, "implementation"); !implementation.empty()) {
      name += " \u2192 " + implementation;  // a GNU IFUNC: the name given, then the code that ran
    }
    std::vector<int> breakpoints;
    std::string addresses;
    if (kind == "entry") {
      line += "> " + name;
      if (event.value("tail_call", false)) line += " [tail]";
      if (indirect) line += " [indirect]";
      const CodeAddress site = event_address(event, "call_site");
      if (site.static_va || site.live) {
        const JsonPlace caller{text_at(event, "caller"), address_at(event, "caller_va")};
        line += "  from " + place_text(names.place(site), site, caller);
        if (!event.value("call_site_verified", true)) line += " (unverified)";
      } else {
        line += line_text(targets[i]);
      }
      if (stopped[i] != 0) line += "  [stopped " + duration_text(stopped[i]) + " in it]";
      add_breakpoints(style, target, breakpoints);
      add_breakpoints(style, site, breakpoints);
      addresses = address_text(target, style);
      if (site.static_va || site.live) addresses += " @" + address_text(site, style);
    } else if (is_end(kind)) {
      line += (kind == "unwound" ? "~ " : "< ") + name;
      if (kind == "tail_exit") line += " [tail]";
      if (kind == "unwound") line += " [unwound]";
      if (event.value("inferred", false)) line += " [inferred]";  // no probe saw it: a later event showed it
      // Self time where it helps: a call with traced children, all of them ended.
      if (const auto entry = calls.entry_of[i];
          entry && ran[*entry] && !calls.children[*entry].empty() && !calls.child_left_open[*entry]) {
        uint64_t children = 0;
        for (size_t child : calls.children[*entry]) children += ran[child].value_or(0);
        line += "  self " + duration_text(*ran[*entry] > children ? *ran[*entry] - children : 0);
      }
      add_breakpoints(style, probe, breakpoints);
      addresses = address_text(target, style);
    } else if (kind == "stop") {
      const CodeAddress where = probe.static_va || probe.live ? probe : target;
      line += "| stop at " + place_text(names.place(where), where);
      add_breakpoints(style, probe, breakpoints);
      addresses = address_text(where, style);
    } else {
      line += "? " + kind + " " + name;
    }
    if (event.value("depth_overflow", false)) line += " [depth overflow]";
    if (const std::string values = fetches_text(array_at(event, "fetches"), indirect); !values.empty()) {
      line += "  " + values;
    }
    for (int id : breakpoints) line += "  [bp " + std::to_string(id) + "]";
    if (style.addresses && !addresses.empty()) line += "  [" + addresses + "]";
    lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace xref::render
