#include "trace/text.h"
#include "trace/saved/file.h"

#include "demangle.h"
#include "hex.h"
#include "output/json_envelope.h"
#include "output/json_writer.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace xref {
namespace {

std::vector<std::string> symbols_of(const nlohmann::json& events) {
  std::vector<std::string> names;
  for (const auto& event : events) names.push_back(saved_text(event, "symbol"));
  return names;
}

std::string event_line(const nlohmann::json& event, const NameLabels& labels) {
  const std::string kind = saved_text(event, "kind");
  const bool indirect = event.value("indirect", false);
  const std::string symbol = saved_text(event, "symbol");
  const std::string name = indirect ? symbol : labels(symbol);
  const std::string module = saved_text(event, "module"), target_va = saved_text(event, "target_va");
  const std::string site = saved_text(event, "call_site_va"), site_module = saved_text(event, "call_site_module");
  const std::string implementation = saved_text(event, "implementation");
  std::string fetches;
  for (const auto& fetch : event.value("fetches", nlohmann::json::array())) {
    // An indirect call's fetched live target is shown as its static VA.
    if (!(indirect && saved_text(fetch, "name") == "target")) fetches += "  " + fetch_text(fetch);
  }
  EventLineParts parts;
  parts.kind = kind;
  parts.depth = event.value("depth", int64_t{0});
  parts.module = module;
  parts.target_va = target_va;
  parts.call_site_va = site;
  parts.call_site_module = site_module;
  parts.call_site_verified = event.value("call_site_verified", false);
  parts.name = name;
  parts.indirect = indirect;
  parts.implementation = implementation;
  parts.tail_call = event.value("tail_call", false);
  parts.inferred = event.value("inferred", false);
  parts.depth_overflow = event.value("depth_overflow", false);
  parts.fetches = fetches;
  std::string line;
  append_event_line(line, parts);
  return line;
}

}  // namespace

std::string fetch_text(const nlohmann::json& fetch) {
  std::optional<uint64_t> value;
  bool is_signed = false;
  if (fetch.contains("signed_value") && fetch["signed_value"].is_number_integer()) {
    value = static_cast<uint64_t>(fetch["signed_value"].get<int64_t>());
    is_signed = true;
  } else if (const std::string hex = saved_text(fetch, "value"); !hex.empty()) {
    // Shown as written: a saved file's spelling is kept, not re-read.
    return saved_text(fetch, "name") + "=" + hex;
  }
  std::string text;
  append_fetch_text(text, saved_text(fetch, "name"), value, is_signed, saved_text(fetch, "error"));
  return text;
}

void append_fetch_text(std::string& out, std::string_view name, std::optional<uint64_t> value, bool is_signed,
                       std::string_view error) {
  out.append(name);
  out += '=';
  if (value) {
    if (is_signed) {
      append_signed_decimal(out, static_cast<int64_t>(*value));
    } else {
      append_hex(out, *value);
    }
    return;
  }
  // The JSON error is "unreadable: EFAULT (-14)"; text shows "<unreadable: EFAULT>".
  if (const size_t number = error.rfind(" ("); number != std::string_view::npos) error = error.substr(0, number);
  out += '<';
  out.append(error.empty() ? std::string_view("unreadable") : error);
  out += '>';
}

NameLabels::NameLabels(const std::vector<std::string>& names) {
  std::map<std::string, std::string> first_full_name;
  for (const std::string& name : names) {
    const std::string short_name = short_function_name(name);
    auto [slot, inserted] = first_full_name.emplace(short_name, name);
    if (!inserted && slot->second != name &&
        std::find(ambiguous_.begin(), ambiguous_.end(), short_name) == ambiguous_.end()) {
      ambiguous_.push_back(short_name);
    }
  }
}

std::string NameLabels::operator()(const std::string& name) const {
  const std::string short_name = short_function_name(name);
  return std::find(ambiguous_.begin(), ambiguous_.end(), short_name) == ambiguous_.end() ? short_name : name;
}

void append_window_line(std::string& out, const WindowLineParts& parts) {
  out += "window ";
  append_decimal(out, parts.window_id);
  out += "  tid ";
  append_decimal(out, parts.tid);
  out += "  start ";
  // The start function's VA, with its module when that is a library.
  if (!parts.start_module.empty()) {
    out.append(parts.start_module);
    out += ':';
  }
  out.append(parts.start_va);
  out += "  status ";
  out.append(parts.status);
  if (parts.status == "complete") {
    out += "  stop ";
    out.append(parts.stop_va);
  }
  if (!parts.ended_in.empty()) {
    out += "  (ended in ";
    out.append(parts.ended_in);
    out += ", reached by a tail jump)";
  }
  if (parts.end_inferred) out += "  (end inferred: seen by a later event)";
  out.append(parts.start_fetches);
  if (parts.possible_loss) {
    out += "  lost ";
    if (parts.lost_events) {
      append_decimal(out, *parts.lost_events);
    } else {
      out += '?';
    }
    out += " (incomplete)";
  }
  if (!parts.mark.empty()) {
    out += "  ";
    out.append(parts.mark);
  }
  out += '\n';
}

std::string window_line(const nlohmann::json& window) {
  const std::string module = saved_text(window, "start_module"), start_va = saved_text(window, "start_va");
  const std::string status = saved_text(window, "status"), stop_va = saved_text(window, "stop_va");
  const std::string ended_in = saved_text(window, "ended_in"), mark = window_mark_text(window);
  std::string fetches;
  for (const auto& fetch : window.value("start_fetches", nlohmann::json::array())) fetches += "  " + fetch_text(fetch);
  WindowLineParts parts;
  parts.window_id = window.value("window_id", uint64_t{0});
  parts.tid = window.value("tid", uint64_t{0});
  parts.start_module = module;
  parts.start_va = start_va;
  parts.status = status;
  parts.stop_va = stop_va;
  parts.ended_in = ended_in;
  parts.end_inferred = window.value("end_inferred", false);
  parts.start_fetches = fetches;
  parts.possible_loss = window.value("possible_loss", false);
  if (const auto lost = window.find("lost_events"); lost != window.end() && lost->is_number_unsigned()) {
    parts.lost_events = lost->get<uint64_t>();
  }
  parts.mark = mark;
  std::string line;
  append_window_line(line, parts);
  line.pop_back();
  return line;
}

std::string window_mark_text(const nlohmann::json& window) {
  const std::string status = saved_text(window, "mark_status");
  if (status.empty()) return "";
  if (status == "matched") {
    return "mark " + json_text(saved_text(window, "mark_match")) +
           (window.value("mark_certain", false) ? "" : "?");
  }
  if (status == "no_match_yet") return "mark (no match yet)";
  if (status == "unreadable") return "mark (unreadable: " + saved_text(window, "mark_error") + ")";
  return "mark (" + status + ")";
}

void append_event_line(std::string& out, const EventLineParts& parts) {
  const size_t depth = static_cast<size_t>(std::max<int64_t>(parts.depth, 0));
  // The depth right-aligned in 4 columns, then two spaces per level.
  char number[24];
  const auto written = std::to_chars(number, number + sizeof number, depth);
  const size_t digits = static_cast<size_t>(written.ptr - number);
  if (digits < 4) out.append(4 - digits, ' ');
  out.append(number, digits);
  out.append(2 + 2 * depth, ' ');
  auto append_target = [&] {
    if (!parts.module.empty()) {
      out.append(parts.module);
      out += ':';
    }
    out.append(parts.target_va);
  };
  auto append_name = [&] {
    out += " (";
    out.append(parts.name);
    if (parts.indirect) out += " [indirect]";
    if (!parts.implementation.empty()) {
      out += " \u2192 ";  // a GNU IFUNC: the name given, then the code that ran
      out.append(parts.implementation);
    }
    out += ')';
  };
  if (parts.kind == "entry") {
    out += "> ";
    append_target();
    if (!parts.call_site_va.empty()) {
      out += " @";
      if (!parts.call_site_module.empty()) {
        out.append(parts.call_site_module);
        out += ':';
      }
      out.append(parts.call_site_va);
      if (!parts.call_site_verified) out += '?';
    }
    append_name();
    if (parts.tail_call) out += " [tail]";
  } else if (parts.kind == "return" || parts.kind == "tail_exit" || parts.kind == "unwound") {
    out += "< ";
    append_target();
    append_name();
    if (parts.kind == "tail_exit") out += " [tail]";
    if (parts.kind == "unwound") out += " [unwound]";
    if (parts.inferred) out += " [inferred]";  // no probe saw it: a later event showed it
  } else if (parts.kind == "stop") {
    out += "* ";
    out.append(parts.target_va.empty() ? std::string_view("?") : parts.target_va);
    out += " (stop)";
  }
  if (parts.depth_overflow) out += " [depth overflow]";
  out.append(parts.fetches);
  out += '\n';
}

void print_window_text(std::ostream& out, const nlohmann::json& window) {
  out << window_line(window) << "\n";
  const nlohmann::json events = window.value("events", nlohmann::json::array());
  const NameLabels labels(symbols_of(events));
  for (const auto& event : events) out << event_line(event, labels);
}

}  // namespace xref
