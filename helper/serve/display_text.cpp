#include "serve/display_text.h"

#include <sstream>

#include "trace/text.h"

namespace xref::serve {
namespace {

void add_live(const nlohmann::json& object, const char* key, std::vector<uint64_t>& out) {
  if (!object.is_object()) return;
  const auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return;
  try {
    out.push_back(std::stoull(found->get<std::string>(), nullptr, 0));
  } catch (const std::exception&) {
  }
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::vector<std::string> window_text(const DisplayedSessionInfo& session, const nlohmann::json& window,
                                     render::Names&, const std::vector<StopClock::Interval>&) {
  std::ostringstream out;
  out << "session " << session.id << " ";
  print_window_text(out, window);
  return split_lines(out.str());
}

std::vector<std::string> probe_changes_text(const DisplayedSessionInfo& session, const nlohmann::json& changes,
                                            render::Names&) {
  return {"xref: session " + std::to_string(session.id) + ": " + changes.dump()};
}

std::vector<std::string> probe_document_text(const DisplayedSessionInfo& session, const nlohmann::json& document,
                                             const std::string& state, render::Names&) {
  return {"xref: session " + std::to_string(session.id) + " (" + state + "): " + document.dump()};
}

std::vector<std::string> end_text(const DisplayedSessionInfo& session, const nlohmann::json& ended) {
  return {"xref: session " + std::to_string(session.id) + " ended (" + ended.value("stop_reason", std::string("?")) +
          ")"};
}

std::vector<uint64_t> window_live_addresses(const nlohmann::json& window) {
  std::vector<uint64_t> out;
  for (const nlohmann::json& event : window.value("events", nlohmann::json::array())) {
    for (const char* key : {"target_live", "call_site_live", "probe_live"}) add_live(event, key, out);
  }
  return out;
}

std::vector<uint64_t> probe_live_addresses(const nlohmann::json& data, const nlohmann::json& start) {
  std::vector<uint64_t> out;
  for (const nlohmann::json& address : start.value("addresses", nlohmann::json::array())) add_live(address, "live", out);
  for (const nlohmann::json& address : data.value("addresses", nlohmann::json::array())) {
    const nlohmann::json callers = address.value("callers", nlohmann::json::object());
    for (const nlohmann::json& site : callers.value("sites", nlohmann::json::array())) {
      add_live(site, "call_site_live", out);
      add_live(site, "return_live", out);
    }
    for (const nlohmann::json& sample : address.value("samples", nlohmann::json::array())) {
      add_live(sample, "call_site_live", out);
      add_live(sample, "return_live", out);
    }
  }
  return out;
}

}  // namespace xref::serve
