// A watch session's part of the display: the writes of its watch_update
// events, printed at each stop (at most kWritesPerStop, the rest by `xref
// show`), the write that --stop-when stopped at, and its summary at the end.
#include <algorithm>

#include "render/watch_text.h"
#include "serve/display.h"

namespace xref::serve {

void Display::take_watch_update(Session& into, const nlohmann::json& event) {
  const auto armed = event.find("armed_ns");
  if (armed != event.end() && armed->is_number_unsigned()) into.armed_ns = armed->get<uint64_t>();
  for (const nlohmann::json& record : event.value("records", nlohmann::json::array())) {
    into.writes.emplace_back(record, false);
    if (into.writes.size() <= kKeptWrites) continue;
    // The oldest shown write goes first; else the oldest.
    auto oldest = std::find_if(into.writes.begin(), into.writes.end(), [](const auto& kept) { return kept.second; });
    if (oldest == into.writes.end()) oldest = into.writes.begin();
    into.writes.erase(oldest);
    ++into.writes_dropped;
  }
  const auto stop = event.find("stop");
  if (stop != event.end() && stop->is_object() && !into.watch_stop.is_object()) {
    into.watch_stop = *stop;
    into.watch_stop_shown = false;
  }
}

void Display::show_watch(Session& kept, const Selection& selection, render::Names& names, Shown& shown) {
  const std::string session = std::to_string(kept.id);
  if (kept.watch_stop.is_object() && (!kept.watch_stop_shown || selection.all)) {
    // The write that stopped the thread, whether shown before or not.
    nlohmann::json record;
    for (const auto& [write, was_shown] : kept.writes) {
      if (write.value("seq", nlohmann::json()) == kept.watch_stop.value("seq", nlohmann::json())) record = write;
    }
    auto lines = render::watch_stop_lines(kept.id, kept.watch_stop, record, kept.armed_ns, names);
    shown.lines.insert(shown.lines.end(), lines.begin(), lines.end());
    kept.watch_stop_shown = true;
  }
  std::vector<std::pair<nlohmann::json, bool>*> fresh;
  for (auto& kept_write : kept.writes) {
    if (!kept_write.second || selection.all) fresh.push_back(&kept_write);
  }
  if (selection.all && kept.writes_dropped > 0) {
    shown.lines.push_back("xref: session " + session + ": the " + std::to_string(kept.writes_dropped) +
                          " oldest writes are no longer kept");
  }
  const size_t limit = selection.at_stop && !selection.all ? kWritesPerStop : fresh.size();
  if (!fresh.empty()) {
    shown.lines.push_back("xref: watch session " + session + ": " + std::to_string(fresh.size()) +
                          (selection.all ? " writes kept" : fresh.size() == 1 ? " new write" : " new writes"));
    shown.lines.push_back("   seq  tid     range  old → new                         writer");
  }
  for (size_t at = 0; at < fresh.size() && at < limit; ++at) {
    shown.lines.push_back(render::watch_record_line(fresh[at]->first, kept.armed_ns, &names));
    fresh[at]->second = true;
  }
  if (fresh.size() > limit) {
    shown.lines.push_back("xref: " + std::to_string(fresh.size() - limit) + " more new writes: `xref show` prints them");
  }
  if (kept.ended && kept.document.is_object() && (!kept.document_shown || selection.all)) {
    auto lines = render::watch_summary_lines(kept.document);
    for (std::string& line : lines) shown.lines.push_back("  " + line);
    kept.document_shown = true;
  }
}

}  // namespace xref::serve
