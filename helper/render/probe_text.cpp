#include "render/probe_text.h"

#include <algorithm>
#include <cstdio>

#include "hex.h"
#include "output/json_envelope.h"
#include "probe_abi.h"
#include "render/fetch_text.h"
#include "render/json_fields.h"
#include "render/process_name.h"
#include "render/place_text.h"
#include "render/session_text.h"

namespace xref::render {
namespace {

constexpr size_t kHistBar = 40;

// The probed address itself.
CodeAddress listed_address(const nlohmann::json& listed) {
  std::optional<uint64_t> live = address_at(listed, "live");
  if (!live) live = address_at(listed, "probe_live");
  return {text_at(listed, "module"), address_at(listed, "static_va"), live};
}

// Where a caller, a sample or a stop came from: its call instruction, else
// the return address (no call instruction was found before it).
struct CameFrom {
  CodeAddress address;
  bool return_address = false;
  JsonPlace json;
};

std::optional<CameFrom> came_from(const nlohmann::json& entry) {
  const bool verified = entry.value("call_site_verified", true);
  CameFrom from;
  from.json = {text_at(entry, "caller"), address_at(entry, "caller_va")};
  if (auto call = address_at(entry, "call_site_live"); call && verified) {
    from.address = {text_at(entry, "module"), address_at(entry, "call_site_va"), call};
    return from;
  }
  if (auto call_va = address_at(entry, "call_site_va"); call_va && verified && !text_at(entry, "caller").empty()) {
    from.address = {text_at(entry, "module"), call_va, std::nullopt};
    return from;
  }
  if (auto back = address_at(entry, "return_live")) {
    from.address = {"", std::nullopt, back};
    from.return_address = true;
    return from;
  }
  return std::nullopt;
}

std::string came_from_text(const nlohmann::json& entry, Names& names) {
  const auto from = came_from(entry);
  if (!from) return "?";
  return place_text(names.place(from->address), from->address, from->json) +
         (from->return_address ? " (return address)" : "");
}

// One frame of a --stacks stack: its pc, or the call before its return address.
std::string frame_text(const nlohmann::json& frame, Names& names) {
  std::optional<uint64_t> live = address_at(frame, "call_site_live");
  if (!live) live = address_at(frame, "live");
  CodeAddress address{"", std::nullopt, live};
  if (!live) address.static_va = address_at(frame, "static_va");
  const std::optional<Place> place = names.place(address);
  if (!place || place->function.empty()) {
    // The helper's name of it, as the JSON carries it ("price_order+0x9c").
    const std::string function = text_at(frame, "function");
    if (!function.empty()) return function + line_text(place);
  }
  return place_text(place, address);
}

// "validate at sample_service.c:150", or "0x1cf0  validate at ..." when the
// user spelt it otherwise: the name is never printed twice.
std::string address_text(const nlohmann::json& listed, Names& names) {
  std::string spelled = text_at(listed, "address");
  if (spelled.empty()) spelled = "?";
  const CodeAddress address = listed_address(listed);
  const std::optional<Place> place = names.place(address);
  std::string where;
  std::string short_where;  // the same in the helper's short label: the spelling may be that
  if (place && !place->function.empty()) {
    Place function_only = *place;
    function_only.file.clear();
    function_only.line = 0;
    where = place_text(function_only, address);
    function_only.debugger = false;
    short_where = place_text(function_only, address);
  } else {
    where = text_at(listed, "location");
    if (where.empty()) where = static_text(address);
  }
  // "validate", "libc.so.6:malloc": the spelling already says the name.
  for (const std::string& named : {where, short_where}) {
    if (where.empty() || (!named.empty() && (named == spelled || spelled.ends_with(":" + named)))) {
      return spelled + line_text(place);
    }
  }
  return spelled + "  " + where + line_text(place);
}

std::string group_key(const std::string& by, const nlohmann::json& value) {
  if (const auto found = value.find("string"); found != value.end() && found->is_string()) {
    return string_text(found->get<std::string>(), value.value("truncated", false), count_or_zero(value, "length"));
  }
  if (by == "tid") {
    if (auto tid = address_at(value, "key")) return std::to_string(*tid);
  }
  const std::string key = text_at(value, "key");
  return key.empty() ? "?" : key;
}

std::string right(uint64_t number, size_t width) {
  std::string text = std::to_string(number);
  return text.size() >= width ? text : std::string(width - text.size(), ' ') + text;
}

size_t widest(const nlohmann::json& entries, const char* key) {
  size_t width = 1;
  for (const nlohmann::json& entry : entries) width = std::max(width, std::to_string(count_or_zero(entry, key)).size());
  return width;
}

std::string ordinal(uint64_t n) {
  const char* suffix = (n % 100 >= 11 && n % 100 <= 13) ? "th"
                       : n % 10 == 1                    ? "st"
                       : n % 10 == 2                    ? "nd"
                       : n % 10 == 3                    ? "rd"
                                                        : "th";
  return std::to_string(n) + suffix;
}

std::string rate_text(const nlohmann::json& listed) {
  double rate = 0;
  if (const auto found = listed.find("rate_per_s"); found != listed.end() && found->is_number()) rate = found->get<double>();
  char text[48];
  std::snprintf(text, sizeof text, "%.1f/s", rate);
  return text;
}

// A sample that carries something the counts do not: values, registers, a mark.
bool has_values(const nlohmann::json& sample) {
  return !array_at(sample, "fetches").empty() || sample.contains("regs") ||
         (sample.contains("mark_match") && !sample["mark_match"].is_null());
}

std::string sample_line(const nlohmann::json& sample, Names& names) {
  std::string line = "    sample hit " + std::to_string(count_or_zero(sample, "hit")) + "  thread " +
                     std::to_string(count_or_zero(sample, "tid"));
  if (const std::string values = fetches_text(array_at(sample, "fetches")); !values.empty()) line += "  " + values;
  if (const nlohmann::json& regs = object_at(sample, "regs"); !regs.empty()) {
    line += "  rip=" + text_at(regs, "rip") + " rsp=" + text_at(regs, "rsp") + " (registers: --json)";
  }
  if (sample.contains("mark_match") && sample["mark_match"].is_string()) {
    line += "  mark " + json_text(sample["mark_match"]);
  }
  if (came_from(sample)) line += "  from " + came_from_text(sample, names);
  return line;
}

// Samples with values, at most `most` (0: all); those without any are left
// out: the counts above say as much (no run of identical lines).
void sample_lines(const nlohmann::json& samples, size_t most, const char* more_hint, Names& names,
                  std::vector<std::string>& lines) {
  size_t with_values = 0, shown = 0;
  for (const nlohmann::json& sample : samples) {
    if (!has_values(sample)) continue;
    ++with_values;
    if (most != 0 && shown == most) continue;
    lines.push_back(sample_line(sample, names));
    ++shown;
  }
  if (with_values > shown) lines.push_back("    ... " + plural(with_values - shown, "more sample") + " (" + more_hint + ")");
}

void callers_lines(const nlohmann::json& listed, Names& names, std::vector<std::string>& lines) {
  if (!listed.contains("callers") || !listed["callers"].is_object()) return;
  const nlohmann::json& callers = listed["callers"];
  if (!callers.contains("sites")) {
    if (const std::string note = text_at(callers, "note"); !note.empty()) lines.push_back("    callers unknown: " + note);
    return;
  }
  const nlohmann::json& sites = array_at(callers, "sites");
  if (!sites.empty()) {
    lines.push_back("    callers (" + text_at(callers, "method") + "):");
    const size_t width = widest(sites, "hits");
    for (const nlohmann::json& site : sites) {
      lines.push_back("      " + right(count_or_zero(site, "hits"), width) + "  " + came_from_text(site, names));
    }
  }
  const uint64_t not_counted = count_or_zero(callers, "not_counted"), unread = count_or_zero(callers, "unread");
  if (not_counted != 0 || unread != 0) {
    lines.push_back("    callers not known for " + plural(not_counted + unread, "hit") + ": " +
                    std::to_string(not_counted) + " past the caller map's " + std::to_string(XREF_PROBE_MAX_CALLERS) +
                    " entries, " + std::to_string(unread) + " with the return address unread");
  }
}

void groups_lines(const nlohmann::json& listed, std::vector<std::string>& lines) {
  const nlohmann::json& groups = object_at(listed, "groups");
  if (groups.empty()) return;
  const std::string by = text_at(groups, "by");
  std::string heading = "    by " + by + " (" + plural(count_or_zero(groups, "keys"), "key");
  if (const uint64_t full = count_or_zero(groups, "not_counted"); full != 0) {
    const bool strings = !array_at(groups, "values").empty() && array_at(groups, "values")[0].contains("string");
    heading += "; " + plural(full, "hit") + " not counted: the group map of " +
               std::to_string(strings ? XREF_PROBE_MAX_STRING_GROUPS : XREF_PROBE_MAX_GROUPS) + " keys was full";
  }
  if (const uint64_t unread = count_or_zero(groups, "unread"); unread != 0) {
    heading += "; " + plural(unread, "hit") + " whose key was unread";
  }
  lines.push_back(heading + "):");
  const nlohmann::json& values = array_at(groups, "values");
  const size_t width = widest(values, "hits");
  for (const nlohmann::json& value : values) {
    lines.push_back("      " + right(count_or_zero(value, "hits"), width) + "  " + group_key(by, value));
  }
}

void hist_lines(const nlohmann::json& listed, std::vector<std::string>& lines) {
  const nlohmann::json& hist = object_at(listed, "hist");
  const nlohmann::json& buckets = array_at(hist, "buckets");
  if (buckets.empty()) return;
  // As bpftrace draws hist(): one row per power of two, a bar of @.
  lines.push_back("    hist " + text_at(hist, "name") + ":");
  uint64_t most = 1;
  for (const nlohmann::json& bucket : buckets) most = std::max(most, count_or_zero(bucket, "hits"));
  for (const nlohmann::json& bucket : buckets) {
    const uint64_t hits = count_or_zero(bucket, "hits");
    std::string range = "[" + std::to_string(count_or_zero(bucket, "from")) + ", " +
                        std::to_string(count_or_zero(bucket, "to")) + "]";
    if (range.size() < 26) range.append(26 - range.size(), ' ');
    const size_t bar = static_cast<size_t>(hits * kHistBar / most);
    lines.push_back("      " + range + right(hits, 10) + " |" + std::string(bar, '@') +
                    std::string(kHistBar - bar, ' ') + "|");
  }
}

void stacks_lines(const nlohmann::json& listed, Names& names, std::vector<std::string>& lines) {
  const nlohmann::json& stacks = object_at(listed, "stacks");
  if (stacks.empty()) return;
  lines.push_back("    stacks (" + text_at(stacks, "method") + ", " +
                  plural(count_or_zero(stacks, "keys"), "distinct stack") + ", " +
                  std::to_string(count_or_zero(stacks, "unread")) + " unread):");
  for (const nlohmann::json& stack : array_at(stacks, "stacks")) {
    lines.push_back("      " + std::to_string(count_or_zero(stack, "hits")));
    for (const nlohmann::json& frame : array_at(stack, "frames")) lines.push_back("          " + frame_text(frame, names));
  }
}

// "+ADDED  NAME  (HITS in all)" for callers or group keys that are new or grew.
template <typename Name>
void grown_lines(const std::string& heading, const nlohmann::json& entries, const Name& name,
                 std::vector<std::string>& lines) {
  if (entries.empty()) return;
  lines.push_back(heading);
  for (const nlohmann::json& entry : entries) {
    lines.push_back("      +" + std::to_string(count_or_zero(entry, "hits_added")) + "  " + name(entry) + "  (" +
                    std::to_string(count_or_zero(entry, "hits")) + " in all)" +
                    (entry.value("new", false) ? "  new" : ""));
  }
}

std::string seconds_text(uint64_t ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", static_cast<double>(ms) / 1000.0);
  return text;
}

// `who`: "xref: probe session 2", or "xref: probe" for the CLI's own run.
std::vector<std::string> stop_lines(const std::string& who, const nlohmann::json& stop, Names& names) {
  std::string address = text_at(stop, "address");
  std::string line = who + " stopped thread " +
                     std::to_string(count_or_zero(stop, "tid")) + ": hit " + std::to_string(count_or_zero(stop, "hit")) +
                     " of " + (address.empty() ? "?" : address) + ", the " + ordinal(count_or_zero(stop, "match")) +
                     " where --stop-when '" + text_at(stop, "filter") + "' held";
  if (const std::string values = fetches_text(array_at(stop, "fetches")); !values.empty()) line += ": " + values;
  std::vector<std::string> lines{line};
  if (!stop.value("signal_sent", false)) {
    lines.push_back("xref: the stop signal could not be sent (error " +
                    std::to_string(count_or_zero(stop, "signal_error")) + "): the thread did not stop");
    return lines;
  }
  const CodeAddress probe{text_at(stop, "module"), address_at(stop, "probe_va"), address_at(stop, "probe_live")};
  const std::optional<Place> place = names.place(probe);
  const std::string where = place ? " at " + place_text(place, probe) : "";
  lines.push_back("xref: (a signal from the probe: the thread stopped just after the probed instruction" + where + ")");
  if (came_from(stop)) lines.push_back("xref: called from " + came_from_text(stop, names));
  return lines;
}

}  // namespace

std::vector<std::string> probe_stop_lines(uint64_t session, const nlohmann::json& stop, Names& names) {
  return stop_lines("xref: probe session " + std::to_string(session), stop, names);
}

std::vector<std::string> probe_lines(const nlohmann::json& document, Names& names, const ProbeStyle& style) {
  const nlohmann::json& summary = object_at(document, "summary");
  std::string backend = text_at(document, "backend");
  if (backend.empty()) backend = "?";
  std::vector<std::string> lines;
  if (style.session) {
    lines.push_back("xref: probe session " + std::to_string(*style.session) + " (" + style.state + "), " +
                    std::to_string(count_or_zero(summary, "duration_ms")) + " ms, backend " + backend);
  } else {
    const nlohmann::json& process = object_at(document, "process");
    std::string line = "probed " + process_name(text_at(process, "comm"), text_at(process, "exe_path")) + " (pid " + std::to_string(count_or_zero(process, "pid")) +
                       ") for " + std::to_string(count_or_zero(summary, "duration_ms")) + " ms, backend " + backend;
    if (const std::string reason = text_at(summary, "stop_reason"); !reason.empty()) {
      line += "; stopped: " + stop_reason_text(reason);
    }
    lines.push_back(line);
  }
  for (const nlohmann::json& warning : array_at(document, "warnings")) {
    if (warning.is_string()) lines.push_back("warning: " + warning.get<std::string>());
  }
  for (const nlohmann::json& glob : array_at(document, "globs")) {
    lines.push_back(text_at(glob, "pattern") + ": " + plural(count_or_zero(glob, "matched"), "function") + " matched");
  }
  for (const nlohmann::json& listed : array_at(document, "addresses")) {
    lines.push_back("  " + address_text(listed, names) + "  hits " + std::to_string(count_or_zero(listed, "hits")) +
                    "  passed " + std::to_string(count_or_zero(listed, "passed")) + "  threads " +
                    std::to_string(array_at(listed, "threads").size()) + "  rate " + rate_text(listed));
    if (const nlohmann::json& released = object_at(listed, "released"); !released.empty()) {
      std::string reason = text_at(released, "reason");
      lines.push_back("    not observed since " + std::to_string(count_or_zero(released, "at_ms")) + " ms (" +
                      (reason.empty() ? "?" : reason) + "): counted up to then");
    }
    callers_lines(listed, names, lines);
    groups_lines(listed, lines);
    hist_lines(listed, lines);
    stacks_lines(listed, names, lines);
    sample_lines(array_at(listed, "samples"), style.samples, "--json shows them all", names, lines);
    if (const uint64_t lost = count_or_zero(listed, "records_lost"); lost != 0) {
      lines.push_back("    lost " + plural(lost, "sample") + " (ring buffer full)");
    }
  }
  const nlohmann::json& stop_when = object_at(document, "stop_when");
  if (!stop_when.empty()) {
    if (const nlohmann::json& stop = object_at(stop_when, "stop"); !stop.empty()) {
      nlohmann::json with_filter = stop;
      with_filter["filter"] = text_at(stop_when, "filter");
      const std::string who = style.session ? "xref: probe session " + std::to_string(*style.session) : "xref: probe";
      for (std::string& line : stop_lines(who, with_filter, names)) lines.push_back(std::move(line));
    } else {
      lines.push_back("--stop-when '" + text_at(stop_when, "filter") + "' never held");
    }
  }
  if (!summary.empty()) {
    lines.push_back(plural(count_or_zero(summary, "hits"), "hit") + ", " +
                    std::to_string(count_or_zero(summary, "passed")) + " passed, " +
                    plural(count_or_zero(summary, "records"), "record") + ", " +
                    std::to_string(count_or_zero(summary, "lost_events")) + " lost: " +
                    (summary.value("complete", false) ? "complete" : "incomplete"));
  }
  return lines;
}

std::vector<std::string> probe_change_lines(uint64_t session, const nlohmann::json& changes, Names& names) {
  const uint64_t elapsed = count_or_zero(changes, "elapsed_ms"), since = count_or_zero(changes, "since_ms");
  std::vector<std::string> lines{"xref: probe session " + std::to_string(session) + " at " + seconds_text(elapsed) +
                                 " (+" + seconds_text(elapsed > since ? elapsed - since : 0) + "): " +
                                 plural(count_or_zero(changes, "hits_added"), "new hit") + ", " +
                                 std::to_string(count_or_zero(changes, "lost_events")) + " lost"};
  if (const nlohmann::json& stop = object_at(changes, "stop"); !stop.empty()) {
    for (std::string& line : probe_stop_lines(session, stop, names)) lines.push_back(std::move(line));
  }
  for (const nlohmann::json& change : array_at(changes, "addresses")) {
    const uint64_t hits = count_or_zero(change, "hits"), added = count_or_zero(change, "hits_added");
    const uint64_t passed = count_or_zero(change, "passed");
    std::string line = "  " + address_text(change, names) + "  hits " + std::to_string(hits) + " " +
                       (added != 0 ? "(+" + std::to_string(added) + ")" : std::string("(no new hits)"));
    if (passed != hits) {
      line += "  passed " + std::to_string(passed) + " (+" + std::to_string(count_or_zero(change, "passed_added")) + ")";
    }
    line += "  threads " + std::to_string(count_or_zero(change, "threads"));
    std::string fresh;
    for (const nlohmann::json& tid : array_at(change, "new_threads")) {
      if (tid.is_number_integer() && tid.get<int64_t>() >= 0) fresh += " " + std::to_string(tid.get<int64_t>());
    }
    if (!fresh.empty()) line += ", new" + fresh;
    lines.push_back(line);
    if (added == 0) continue;
    const nlohmann::json& callers = object_at(change, "callers");
    grown_lines("    callers (" + text_at(callers, "method") + "):", array_at(callers, "sites"),
                [&](const nlohmann::json& site) { return came_from_text(site, names); }, lines);
    const nlohmann::json& groups = object_at(change, "groups");
    const std::string by = text_at(groups, "by");
    grown_lines("    by " + by + ":", array_at(groups, "values"),
                [&](const nlohmann::json& value) { return group_key(by, value); }, lines);
    const nlohmann::json& stacks = object_at(change, "stacks");
    if (!array_at(stacks, "stacks").empty()) {
      lines.push_back("    stacks (" + text_at(stacks, "method") + "):");
      for (const nlohmann::json& stack : array_at(stacks, "stacks")) {
        lines.push_back("      +" + std::to_string(count_or_zero(stack, "hits_added")) + "  (" +
                        std::to_string(count_or_zero(stack, "hits")) + " in all)" +
                        (stack.value("new", false) ? "  new" : ""));
        for (const nlohmann::json& frame : array_at(stack, "frames")) {
          lines.push_back("          " + frame_text(frame, names));
        }
      }
    }
    sample_lines(array_at(change, "samples"), 8, "xref show", names, lines);
    if (const uint64_t lost = count_or_zero(change, "records_lost_added"); lost != 0) {
      lines.push_back("    lost " + plural(lost, "sample") + " (ring buffer full)");
    }
  }
  return lines;
}

std::vector<CodeAddress> probe_addresses(const nlohmann::json& document_or_changes) {
  std::vector<CodeAddress> addresses;
  auto add = [&](const CodeAddress& address) { add_code_address(addresses, address); };
  auto add_from = [&](const nlohmann::json& entry) {
    if (auto from = came_from(entry)) add(from->address);
  };
  auto add_stop = [&](const nlohmann::json& stop) {
    if (stop.empty()) return;
    add({text_at(stop, "module"), address_at(stop, "probe_va"), address_at(stop, "probe_live")});
    add_from(stop);
  };
  add_stop(object_at(object_at(document_or_changes, "stop_when"), "stop"));
  add_stop(object_at(document_or_changes, "stop"));
  for (const nlohmann::json& listed : array_at(document_or_changes, "addresses")) {
    add(listed_address(listed));
    for (const nlohmann::json& site : array_at(object_at(listed, "callers"), "sites")) add_from(site);
    for (const nlohmann::json& stack : array_at(object_at(listed, "stacks"), "stacks")) {
      for (const nlohmann::json& frame : array_at(stack, "frames")) {
        std::optional<uint64_t> live = address_at(frame, "call_site_live");
        if (!live) live = address_at(frame, "live");
        CodeAddress address{"", std::nullopt, live};
        if (!live) address.static_va = address_at(frame, "static_va");
        add(address);
      }
    }
    for (const nlohmann::json& sample : array_at(listed, "samples")) {
      if (has_values(sample)) add_from(sample);
    }
  }
  return addresses;
}

}  // namespace xref::render
