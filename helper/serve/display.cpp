#include "serve/display.h"

#include <algorithm>

#include "render/json_fields.h"
#include "render/session_text.h"
#include "serve/display_text.h"
#include "serve/names_cache.h"

namespace xref::serve {
namespace {

DisplayedSessionInfo info_of(uint64_t id, const std::string& command, const std::string& words,
                             const nlohmann::json& start) {
  const bool addresses = words.find(" --addresses") != std::string::npos;
  return DisplayedSessionInfo{id, command, words, start, addresses};
}

uint64_t number_or(const nlohmann::json& object, const char* key, uint64_t otherwise) {
  if (!object.is_object()) return otherwise;
  const auto found = object.find(key);
  return found != object.end() && found->is_number_unsigned() ? found->get<uint64_t>() : otherwise;
}

}  // namespace

Display::Session& Display::session(uint64_t id) {
  Session& found = sessions_[id];
  found.id = id;
  return found;
}

void Display::keep_window(Session& session, nlohmann::json window) {
  session.windows.push_back({std::move(window), ++arrivals_, false});
  if (session.windows.size() <= kKeptWindows) return;
  // The oldest shown window goes first; else the oldest.
  auto oldest = std::find_if(session.windows.begin(), session.windows.end(), [](const Window& w) { return w.shown; });
  if (oldest == session.windows.end()) oldest = session.windows.begin();
  session.windows.erase(oldest);
  ++session.windows_dropped;
}

bool Display::take_event(const nlohmann::json& event) {
  const auto id = event.find("session");
  if (id == event.end() || !id->is_number_unsigned()) return false;
  const std::string name = event.value("event", "");
  std::lock_guard lock(mutex_);
  Session& into = session(id->get<uint64_t>());
  if (name == "window") {
    if (event.contains("window") && event["window"].is_object()) keep_window(into, event["window"]);
    return true;
  }
  if (name == "watch_update") {
    take_watch_update(into, event);
    return true;
  }
  if (name == "probe_update") {
    // A heartbeat has only counts: nothing to print at a stop.
    if (!event.contains("changes")) return true;
    into.document = event.value("document", nlohmann::json());
    into.document_shown = false;
    // Each drain is a stop the user sees: "0 new hits" says the probe is there.
    into.changes.push_back(event["changes"]);
    while (into.changes.size() > kKeptChanges) into.changes.pop_front();
    return true;
  }
  // A trace's heartbeat is not kept: it goes out as it is, a notification
  // whose text the front end prints while the process runs.
  if (name == "heartbeat") return false;
  if (name == "warning") {
    into.warnings.push_back(event.value("message", ""));
    return true;
  }
  if (name == "session_ended") {
    for (const nlohmann::json& window : event.value("windows", nlohmann::json::array())) keep_window(into, window);
    if (event.contains("document") && event["document"].is_object()) {
      into.document = event["document"];
      into.document_shown = false;
    }
    into.ended = true;
    into.end = event;
    forget_old();
    return true;
  }
  return false;
}

void Display::started(uint64_t id, const std::string& command, pid_t pid, const std::string& words,
                      const nlohmann::json& start) {
  std::lock_guard lock(mutex_);
  Session& into = session(id);
  into.command = command;
  into.pid = pid;
  into.words = words;
  into.start = start;
}

void Display::forget_old() {
  size_t ended = 0;
  for (const auto& [id, kept] : sessions_) ended += kept.ended ? 1 : 0;
  for (auto it = sessions_.begin(); it != sessions_.end() && ended > kKeptEnded;) {
    const Session& kept = it->second;
    const bool all_shown = kept.end_shown && kept.document_shown &&
                           std::all_of(kept.windows.begin(), kept.windows.end(), [](const Window& w) { return w.shown; });
    if (kept.ended && all_shown) {
      it = sessions_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

template <typename Visit>
void Display::each_selected(const Selection& selection, Visit visit) {
  for (auto& [id, kept] : sessions_) {
    if (selection.session && id != *selection.session) continue;
    if (kept.command.empty()) continue;  // events of a session whose start was not for a renderer
    visit(kept);
  }
}

std::map<pid_t, std::vector<uint64_t>> Display::unnamed(const Selection& selection, const NamesCache& names) {
  std::map<pid_t, std::vector<uint64_t>> missing;
  std::lock_guard lock(mutex_);
  auto note = [&](pid_t pid, const std::vector<uint64_t>& addresses) {
    for (uint64_t live : addresses) {
      if (live != 0 && !names.has(pid, live)) missing[pid].push_back(live);
    }
  };
  each_selected(selection, [&](Session& kept) {
    for (const Window& window : kept.windows) {
      if (!window.shown || selection.all) note(kept.pid, window_live_addresses(window.window));
    }
    for (const nlohmann::json& changes : kept.changes) note(kept.pid, probe_live_addresses(changes, kept.start));
    if (kept.command == "watch") {
      nlohmann::json records = nlohmann::json::array();
      for (const auto& [record, was_shown] : kept.writes) {
        if (!was_shown || selection.all) records.push_back(record);
      }
      note(kept.pid, watch_live_addresses(records));
    }
    if (kept.command == "profile") {
      note(kept.pid, profile_addresses(kept, selection));
      return;
    }
    if (selection.all || !selection.at_stop) {
      if (kept.document.is_object()) note(kept.pid, probe_live_addresses(kept.document, kept.start));
    }
  });
  for (auto& [pid, addresses] : missing) {
    std::sort(addresses.begin(), addresses.end());
    addresses.erase(std::unique(addresses.begin(), addresses.end()), addresses.end());
  }
  return missing;
}

Display::Shown Display::show(const Selection& selection, NamesCache& names) {
  Shown shown;
  std::lock_guard lock(mutex_);
  // Windows in the order they arrived, across sessions.
  std::vector<std::pair<Session*, Window*>> windows;
  each_selected(selection, [&](Session& kept) {
    if (selection.all && kept.windows_dropped > 0) {
      shown.lines.push_back("xref: session " + std::to_string(kept.id) + ": the " +
                            std::to_string(kept.windows_dropped) + " oldest windows are no longer kept");
    }
    for (Window& window : kept.windows) {
      if (!window.shown || selection.all) windows.emplace_back(&kept, &window);
    }
  });
  std::sort(windows.begin(), windows.end(),
            [](const auto& a, const auto& b) { return a.second->arrival < b.second->arrival; });
  const size_t limit = selection.window_limit && !selection.all ? selection.window_limit : windows.size();
  std::map<pid_t, std::unique_ptr<render::Names>> by_pid;
  auto names_of = [&](pid_t pid) -> render::Names& {
    auto& slot = by_pid[pid];
    if (!slot) slot = names.names_for(pid);
    return *slot;
  };
  for (size_t i = 0; i < windows.size() && i < limit; ++i) {
    auto [kept, window] = windows[i];
    const uint64_t begin = number_or(window->window, "start_timestamp_ns", 0);
    const uint64_t end = number_or(window->window, "end_timestamp_ns", UINT64_MAX);
    auto lines = window_text(info_of(kept->id, kept->command, kept->words, kept->start), window->window,
                             names_of(kept->pid), stops_.within(kept->pid, begin, end), selection.breakpoints);
    shown.lines.insert(shown.lines.end(), lines.begin(), lines.end());
    window->shown = true;
    ++shown.windows;
  }
  if (windows.size() > limit) {
    shown.lines.push_back("xref: " + std::to_string(windows.size() - limit) +
                          " more new windows: `xref show` prints them");
  }
  each_selected(selection, [&](Session& kept) {
    const DisplayedSessionInfo info = info_of(kept.id, kept.command, kept.words, kept.start);
    for (const std::string& warning : kept.warnings) {
      shown.lines.push_back("xref: session " + std::to_string(kept.id) + ": warning: " + warning);
    }
    kept.warnings.clear();
    if (kept.command == "probe") {
      // At a stop, what changed since the last one; asked for (`xref show`),
      // the result so far: a running probe's every time, an ended one's once.
      const bool whole = selection.all || (!selection.at_stop && (!kept.ended || !kept.document_shown));
      if (whole && kept.document.is_object()) {
        const std::string state = kept.ended ? "ended " + kept.end.value("stop_reason", std::string("?")) : "running";
        auto lines = probe_document_text(info, kept.document, state, names_of(kept.pid));
        shown.lines.insert(shown.lines.end(), lines.begin(), lines.end());
        ++shown.probes;
      } else if (!whole) {
        for (const nlohmann::json& changes : kept.changes) {
          auto lines = probe_changes_text(info, changes, names_of(kept.pid));
          shown.lines.insert(shown.lines.end(), lines.begin(), lines.end());
          ++shown.probes;
        }
      }
      kept.changes.clear();
      // The result as a whole is shown by `xref show` (once, for an ended probe), not by a stop.
      if (whole) kept.document_shown = true;
    }
    if (kept.command == "watch") show_watch(kept, selection, names_of(kept.pid), shown);
    if (kept.command == "profile") show_profile(kept, selection, names_of(kept.pid), shown);
    if (kept.ended && (!kept.end_shown || selection.all)) {
      auto lines = end_text(info, kept.end);
      shown.lines.insert(shown.lines.end(), lines.begin(), lines.end());
      kept.end_shown = true;
    }
    if (kept.ended && !kept.end_reported) {
      shown.ended.push_back({{"session", kept.id}, {"stop_reason", kept.end.value("stop_reason", "")}});
      kept.end_reported = true;
    }
  });
  forget_old();
  return shown;
}

Display::Shown Display::show_json(const Selection& selection) {
  Shown shown;
  std::lock_guard lock(mutex_);
  each_selected(selection, [&](Session& kept) {
    for (Window& window : kept.windows) {
      if (window.shown && !selection.all) continue;
      shown.lines.push_back(nlohmann::json{{"session", kept.id}, {"window", window.window}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace));
      window.shown = window.shown || !selection.peek;
      ++shown.windows;
    }
    if (kept.command == "watch") {
      for (auto& [record, was_shown] : kept.writes) {
        if (was_shown && !selection.all) continue;
        shown.lines.push_back(nlohmann::json{{"session", kept.id}, {"write", record}}.dump(
            -1, ' ', false, nlohmann::json::error_handler_t::replace));
        was_shown = was_shown || !selection.peek;
      }
    }
    if ((kept.command == "probe" || ((kept.command == "watch" || kept.command == "profile") && kept.ended)) &&
        kept.document.is_object() &&
        (selection.all || !kept.document_shown)) {
      shown.lines.push_back(nlohmann::json{{"session", kept.id}, {"document", kept.document}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace));
      if (!selection.peek) {
        kept.document_shown = true;
        kept.changes.clear();
      }
      ++shown.probes;
    }
  });
  return shown;
}

bool Display::known(uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(id);
  return found != sessions_.end() && !found->second.command.empty();
}

bool Display::ended(uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(id);
  return found != sessions_.end() && found->second.ended;
}

pid_t Display::pid_of(uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto found = sessions_.find(id);
  return found != sessions_.end() ? found->second.pid : 0;
}

std::vector<std::string> Display::sessions_table(const nlohmann::json& live) {
  std::lock_guard lock(mutex_);
  std::map<uint64_t, nlohmann::json> running;
  for (const nlohmann::json& entry : live.value("sessions", nlohmann::json::array())) {
    running[entry.value("session", uint64_t{0})] = entry;
  }
  std::vector<render::SessionRow> rows;
  for (const auto& [id, kept] : sessions_) {
    if (kept.command.empty()) continue;
    render::SessionRow row;
    row.session = id;
    row.pid = static_cast<uint64_t>(kept.pid);
    row.command = kept.command;
    row.words = kept.words;
    row.state = kept.ended ? "ended (" + kept.end.value("stop_reason", std::string("?")) + ")" : "running";
    row.backend = kept.start.value("backend", std::string("?"));
    row.windows = kept.windows_dropped + kept.windows.size();
    const nlohmann::json summary = kept.ended ? kept.end.value("summary", nlohmann::json()) : nlohmann::json();
    row.events = number_or(summary, "events", 0);
    if (const auto now = running.find(id); now != running.end()) {
      row.state = now->second.value("state", row.state);
      if (now->second["backend"].is_string()) row.backend = now->second["backend"];
      row.windows = number_or(now->second, "windows", row.windows);
      row.events = number_or(now->second, "events", row.events);
    }
    if (kept.command == "watch" && !kept.ended) row.events = kept.writes_dropped + kept.writes.size();
    if (kept.command == "probe") {
      // A probe's events are its hits, from its latest document.
      const nlohmann::json document = kept.document.is_object() ? kept.document : nlohmann::json::object();
      row.events = number_or(document.value("summary", nlohmann::json()), "hits", 0);
    }
    rows.push_back(row);
  }
  return render::sessions_table(rows);
}

std::variant<Display::EventPlace, std::string> Display::event_place(uint64_t window_id, uint64_t seq,
                                                                    std::optional<uint64_t> only) {
  std::lock_guard lock(mutex_);
  std::vector<EventPlace> found;
  for (auto& [id, kept] : sessions_) {
    if (only && id != *only) continue;
    for (const Window& window : kept.windows) {
      if (number_or(window.window, "window_id", 0) != window_id) continue;
      for (const nlohmann::json& event : window.window.value("events", nlohmann::json::array())) {
        if (number_or(event, "seq", UINT64_MAX) != seq) continue;
        EventPlace place;
        place.session = id;
        place.event = event;
        place.running = !kept.ended;
        // An entry breaks at its call site (its target when it has none),
        // anything else at the instruction it was seen at.
        const std::string kind = event.value("kind", "");
        std::vector<std::pair<const char*, const char*>> keys;
        if (kind == "entry") keys = {{"call_site_live", "the call site of"}, {"target_live", "the entry of"}};
        else keys = {{"probe_live", kind == "return" ? "the return of" : "the stop of"}};
        for (const auto& [key, what] : keys) {
          const auto live = render::address_at(event, key);
          if (!live) continue;
          place.live = *live;
          place.what = what;
          break;
        }
        place.probe_live = render::address_at(event, "probe_live").value_or(0);
        found.push_back(place);
      }
    }
  }
  const std::string name = std::to_string(window_id) + ":" + std::to_string(seq);
  if (found.empty()) {
    return "no event " + name + (only ? " in session " + std::to_string(*only) : std::string()) +
           " among the windows kept; `xref show --all` lists them";
  }
  if (found.size() > 1) return "several sessions have a window " + std::to_string(window_id) + ": add --session N";
  if (found.front().live == 0) return "event " + name + " has no live address";
  return found.front();
}

}  // namespace xref::serve
