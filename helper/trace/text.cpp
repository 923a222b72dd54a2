#include "trace/text.h"
#include "trace/saved/file.h"

#include "demangle.h"
#include "output/json_envelope.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

namespace xref {
namespace {

std::vector<std::string> symbols_of(const nlohmann::json& events) {
  std::vector<std::string> names;
  for (const auto& event : events) names.push_back(saved_text(event, "symbol"));
  return names;
}

// "libc.so.6:0x10a2a0" for a function outside the executable, "0x1c20" inside it.
std::string target_text(const nlohmann::json& event) {
  const std::string module = saved_text(event, "module");
  return (module.empty() ? "" : module + ":") + saved_text(event, "target_va");
}

std::string call_site_text(const nlohmann::json& event) {
  const std::string site = saved_text(event, "call_site_va");
  if (site.empty()) return "";
  const std::string module = saved_text(event, "call_site_module");
  return " @" + (module.empty() ? "" : module + ":") + site + (event.value("call_site_verified", false) ? "" : "?");
}

std::string event_line(const nlohmann::json& event, const NameLabels& labels) {
  const std::string kind = saved_text(event, "kind");
  const int depth = std::max(event.value("depth", 0), 0);
  const bool indirect = event.value("indirect", false);
  std::string name = indirect ? saved_text(event, "symbol") + " [indirect]" : labels(saved_text(event, "symbol"));
  if (const std::string implementation = saved_text(event, "implementation"); !implementation.empty()) {
    name += " \u2192 " + implementation;  // a GNU IFUNC: the name given, then the code that ran
  }
  std::ostringstream line;
  line << std::setw(4) << depth << "  " << std::string(2 * static_cast<size_t>(depth), ' ');
  if (kind == "entry") {
    line << "> " << target_text(event) << call_site_text(event) << " (" << name << ")";
    if (event.value("tail_call", false)) line << " [tail]";
  } else if (kind == "return" || kind == "tail_exit" || kind == "unwound") {
    line << "< " << target_text(event) << " (" << name << ")";
    if (kind == "tail_exit") line << " [tail]";
    if (kind == "unwound") line << " [unwound]";
    if (event.value("inferred", false)) line << " [inferred]";  // no probe saw it: a later event showed it
  } else if (kind == "stop") {
    const std::string stop = saved_text(event, "target_va");
    line << "* " << (stop.empty() ? "?" : stop) << " (stop)";
  }
  if (event.value("depth_overflow", false)) line << " [depth overflow]";
  for (const auto& fetch : event.value("fetches", nlohmann::json::array())) {
    // An indirect call's fetched live target is shown as its static VA above.
    if (!(indirect && saved_text(fetch, "name") == "target")) line << "  " << fetch_text(fetch);
  }
  return line.str();
}

}  // namespace

std::string fetch_text(const nlohmann::json& fetch) {
  const std::string name = saved_text(fetch, "name");
  if (fetch.contains("signed_value") && fetch["signed_value"].is_number_integer()) {
    return name + "=" + std::to_string(fetch["signed_value"].get<int64_t>());
  }
  const std::string value = saved_text(fetch, "value");
  if (!value.empty()) return name + "=" + value;
  // The JSON error is "unreadable: EFAULT (-14)"; text shows "<unreadable: EFAULT>".
  std::string error = saved_text(fetch, "error");
  if (const size_t number = error.rfind(" ("); number != std::string::npos) error.resize(number);
  return name + "=<" + (error.empty() ? std::string("unreadable") : error) + ">";
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

// The start function's VA, with its module when that is a library.
static std::string start_label(const nlohmann::json& window) {
  const std::string module = saved_text(window, "start_module");
  const std::string va = saved_text(window, "start_va");
  return module.empty() ? va : module + ":" + va;
}

std::string window_line(const nlohmann::json& window) {
  const std::string status = saved_text(window, "status");
  std::ostringstream line;
  line << "window " << window.value("window_id", uint64_t{0}) << "  tid " << window.value("tid", uint64_t{0})
       << "  start " << start_label(window) << "  status " << status;
  if (status == "complete") line << "  stop " << saved_text(window, "stop_va");
  if (const std::string ended_in = saved_text(window, "ended_in"); !ended_in.empty()) {
    line << "  (ended in " << ended_in << ", reached by a tail jump)";
  }
  if (window.value("end_inferred", false)) line << "  (end inferred: seen by a later event)";
  for (const auto& fetch : window.value("start_fetches", nlohmann::json::array())) line << "  " << fetch_text(fetch);
  if (window.value("possible_loss", false)) {
    const auto lost = window.find("lost_events");
    line << "  lost "
         << (lost != window.end() && lost->is_number_unsigned() ? std::to_string(lost->get<uint64_t>()) : "?")
         << " (incomplete)";
  }
  if (const std::string mark = window_mark_text(window); !mark.empty()) line << "  " << mark;
  return line.str();
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

void print_window_text(std::ostream& out, const nlohmann::json& window) {
  out << window_line(window) << "\n";
  const nlohmann::json events = window.value("events", nlohmann::json::array());
  const NameLabels labels(symbols_of(events));
  for (const auto& event : events) out << event_line(event, labels) << "\n";
}

}  // namespace xref
