#include "serve/display_text.h"

#include "render/json_fields.h"
#include "render/probe_text.h"
#include "render/session_text.h"
#include "render/watch_text.h"
#include "render/window_text.h"

namespace xref::serve {
namespace {

void add_live(const std::vector<render::CodeAddress>& addresses, std::vector<uint64_t>& out) {
  for (const render::CodeAddress& address : addresses) {
    if (address.live) out.push_back(*address.live);
  }
}

}  // namespace

std::vector<std::string> window_text(const DisplayedSessionInfo& session, const nlohmann::json& window,
                                     render::Names& names, const std::vector<StopClock::Interval>& stops,
                                     const std::map<uint64_t, std::vector<int>>& breakpoints) {
  render::WindowStyle style;
  style.session = session.id;
  style.live_addresses = true;
  style.addresses = session.addresses;
  style.breakpoints = breakpoints;
  for (const StopClock::Interval& stop : stops) style.stops.push_back({stop.begin_ns, stop.end_ns});
  return render::window_lines(window, names, style);
}

std::vector<std::string> probe_changes_text(const DisplayedSessionInfo& session, const nlohmann::json& changes,
                                            render::Names& names) {
  return render::probe_change_lines(session.id, changes, names);
}

std::vector<std::string> probe_document_text(const DisplayedSessionInfo& session, const nlohmann::json& document,
                                             const std::string& state, render::Names& names) {
  render::ProbeStyle style;
  style.session = session.id;
  style.state = state;
  style.samples = 0;  // `xref show --all`: every sample kept
  return render::probe_lines(document, names, style);
}

std::vector<std::string> end_text(const DisplayedSessionInfo& session, const nlohmann::json& ended) {
  nlohmann::json summary = ended.value("summary", nlohmann::json());
  return {render::session_end_line(session.id, session.command, ended.value("stop_reason", std::string("?")),
                                   summary, ended.value("error", nlohmann::json()))};
}

std::vector<uint64_t> window_live_addresses(const nlohmann::json& window) {
  std::vector<uint64_t> out;
  add_live(render::window_addresses(window), out);
  return out;
}

std::vector<uint64_t> probe_live_addresses(const nlohmann::json& data, const nlohmann::json& start) {
  std::vector<uint64_t> out;
  for (const nlohmann::json& address : start.value("addresses", nlohmann::json::array())) {
    if (auto live = render::address_at(address, "live")) out.push_back(*live);
  }
  add_live(render::probe_addresses(data), out);
  return out;
}

std::vector<uint64_t> watch_live_addresses(const nlohmann::json& records) {
  std::vector<uint64_t> out;
  add_live(render::watch_addresses(records), out);
  return out;
}

std::vector<std::string> release_text(uint64_t session, const nlohmann::json& result,
                                      const std::vector<uint64_t>& addresses) {
  return render::release_lines(session, result, addresses);
}

}  // namespace xref::serve
