#include "window_render.h"

#include <algorithm>

#include "hex.h"
#include "number_parse.h"

namespace xref::lldb_plugin {
namespace {

std::string text_field(const nlohmann::json& object, const std::string& key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : std::string();
}

uint64_t number_field(const nlohmann::json& object, const std::string& key) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number_unsigned() ? found->get<uint64_t>() : 0;
}

// The function's name: the debugger's, else the helper's, else the address.
std::string function_name(const CodePlace& place, const nlohmann::json& event, const EventAddress& address) {
  if (!place.function.empty()) return place.function;
  const std::string symbol = text_field(event, "symbol");
  if (!symbol.empty()) return symbol;
  if (address.static_va) return (address.module.empty() ? "" : address.module + ":") + to_hex(*address.static_va);
  if (address.live) return to_hex(*address.live);
  return "?";
}

void add_breakpoints(AddressSymbols& symbols, const EventAddress& address, std::vector<uint32_t>& ids) {
  const auto live = symbols.live(address);
  if (!live) return;
  for (uint32_t id : symbols.breakpoints_at(*live)) {
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
}

std::string event_line(const nlohmann::json& event, AddressSymbols& symbols) {
  const std::string kind = text_field(event, "kind");
  const EventAddress target = event_address(event, "target");
  const EventAddress call_site = event_address(event, "call_site");
  const EventAddress probe = event_address(event, "probe");
  const int depth = event.contains("depth") && event["depth"].is_number_integer() ? event["depth"].get<int>() : 0;
  std::string line(static_cast<size_t>(std::max(depth, 0)) * 2, ' ');
  std::vector<uint32_t> breakpoints;
  const CodePlace target_place = symbols.describe(target);
  const std::string name = function_name(target_place, event, target);
  if (kind == "entry") {
    line += "> " + name;
    if (event.value("tail_call", false)) line += " [tail]";
    if (event.value("indirect", false)) line += " [indirect]";
    if (call_site.known()) {
      line += "  from " + where_text(symbols.describe(call_site), call_site, " ");
      if (event.contains("call_site_verified") && event["call_site_verified"] == false) line += " (unverified)";
    } else if (!target_place.file_line.empty()) {
      line += "  " + target_place.file_line;
    }
    add_breakpoints(symbols, target, breakpoints);
    add_breakpoints(symbols, call_site, breakpoints);
  } else if (kind == "return" || kind == "tail_exit") {
    line += "< " + name + (kind == "tail_exit" ? " [tail]" : "");
    if (event.value("inferred", false)) line += " [inferred]";
    add_breakpoints(symbols, probe, breakpoints);
  } else if (kind == "unwound") {
    line += "~ " + name + " [unwound]";
  } else if (kind == "stop") {
    line += "| stop at " + where_text(symbols.describe(probe.known() ? probe : target), probe.known() ? probe : target, " ");
    add_breakpoints(symbols, probe, breakpoints);
  } else {
    line += "? " + kind + " " + name;
  }
  const std::string values = fetches_text(event.value("fetches", nlohmann::json::array()));
  if (!values.empty()) line += "  " + values;
  for (uint32_t id : breakpoints) line += "  [bp " + std::to_string(id) + "]";
  return line;
}

}  // namespace

std::optional<uint64_t> hex_field(const nlohmann::json& object, const std::string& key) {
  const auto found = object.find(key);
  if (found == object.end()) return std::nullopt;
  if (found->is_number_unsigned()) return found->get<uint64_t>();
  if (!found->is_string()) return std::nullopt;
  auto value = parse_u64(found->get<std::string>(), key);
  if (!value) return std::nullopt;
  return *value;
}

std::string fetches_text(const nlohmann::json& fetches) {
  std::string text;
  if (!fetches.is_array()) return text;
  for (const auto& fetch : fetches) {
    std::string value;
    if (fetch.contains("signed_value") && fetch["signed_value"].is_number_integer()) {
      value = std::to_string(fetch["signed_value"].get<int64_t>());
    } else if (fetch.contains("value") && fetch["value"].is_string()) {
      value = fetch["value"].get<std::string>();
    } else {
      // The helper's error already says "unreadable: EFAULT (14)".
      const std::string error = text_field(fetch, "error");
      value = error.empty() ? "<unreadable>"
              : error.rfind("unreadable", 0) == 0 ? "<" + error + ">"
                                                   : "<unreadable: " + error + ">";
    }
    text += (text.empty() ? "" : " ") + text_field(fetch, "name") + "=" + value;
  }
  return text;
}

std::string where_text(const CodePlace& place, const EventAddress& address, const char* separator) {
  std::string text;
  if (!place.function.empty()) {
    text = place.function + (place.offset != 0 ? "+" + to_hex(place.offset) : std::string());
  } else if (address.static_va) {
    text = (address.module.empty() ? "" : address.module + ":") + to_hex(*address.static_va);
  } else if (address.live) {
    text = to_hex(*address.live);
  }
  if (!place.file_line.empty()) text += (text.empty() ? "" : separator) + place.file_line;
  return text;
}

EventAddress event_address(const nlohmann::json& event, const std::string& role) {
  EventAddress address;
  address.live = hex_field(event, role + "_live");
  address.static_va = hex_field(event, role + "_va");
  address.module = text_field(event, "module");
  if (role == "call_site" && event.contains("call_site_module")) address.module = text_field(event, "call_site_module");
  return address;
}

std::string window_status_text(const nlohmann::json& window) {
  const std::string status = text_field(window, "status");
  const bool possible_loss = window.value("possible_loss", false);
  if (status == "complete" && !possible_loss) return "complete";
  std::string why;
  if (status == "truncated") why = "truncated: the start function was called again before it returned";
  else if (status == "unwound") why = "unwound: the start frame was left by unwinding";
  else if (status == "open_at_stop") why = "still open when the trace stopped";
  else if (status == "target_exited") why = "the process exited";
  else if (status == "unknown") why = "ended, but its end record was lost";
  else if (status != "complete" && status != "incomplete") why = status;
  if (possible_loss) why += std::string(why.empty() ? "" : ", ") + "events may be missing";
  return "incomplete (" + why + ")";
}

std::string window_mark_text(const nlohmann::json& window) {
  const std::string status = text_field(window, "mark_status");
  if (status.empty()) return "";
  if (status == "matched") {
    return "mark " + nlohmann::json(text_field(window, "mark_match")).dump() +
           (window.value("mark_certain", false) ? "" : "?");
  }
  if (status == "no_match_yet") return "mark (no match yet)";
  if (status == "unreadable") return "mark (unreadable: " + text_field(window, "mark_error") + ")";
  return "mark (" + status + ")";
}

std::string event_reference(const nlohmann::json& window, const nlohmann::json& event) {
  return std::to_string(number_field(window, "window_id")) + ":" + std::to_string(number_field(event, "seq"));
}

std::vector<std::string> render_window(const nlohmann::json& window, uint64_t session, AddressSymbols& symbols) {
  std::vector<std::string> lines;
  const nlohmann::json events = window.value("events", nlohmann::json::array());
  std::string header = "window " + std::to_string(number_field(window, "window_id")) + " (session " +
                       std::to_string(session) + ")  tid " + std::to_string(number_field(window, "tid")) + "  " +
                       window_status_text(window) + "  " + std::to_string(events.size()) + " events  lost ";
  const auto lost = window.find("lost_events");
  header += lost != window.end() && lost->is_number_unsigned() ? std::to_string(lost->get<uint64_t>()) : "?";
  if (window.contains("duration_ns") && window["duration_ns"].is_number_unsigned()) {
    char duration[32];
    std::snprintf(duration, sizeof duration, "  %.3f ms", static_cast<double>(window["duration_ns"].get<uint64_t>()) / 1e6);
    header += duration;
  }
  const std::string start_values = fetches_text(window.value("start_fetches", nlohmann::json::array()));
  if (!start_values.empty()) header += "  " + start_values;
  if (const std::string mark = window_mark_text(window); !mark.empty()) header += "  " + mark;
  lines.push_back(header);

  size_t width = 0;
  for (const auto& event : events) width = std::max(width, event_reference(window, event).size());
  for (const auto& event : events) {
    std::string reference = event_reference(window, event);
    reference.resize(width, ' ');
    lines.push_back("  " + reference + "  " + event_line(event, symbols));
  }
  return lines;
}

}  // namespace xref::lldb_plugin
