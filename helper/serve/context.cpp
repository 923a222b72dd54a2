#include "serve/context.h"

#include <limits>

#include "number_parse.h"

namespace xref::serve {
namespace {

ProtocolError invalid(std::string message) { return protocol_error("invalid_request", std::move(message)); }

// An address: a "0x..." (or decimal) string, as JSON readers cannot hold
// every 64-bit integer, or a plain non-negative integer.
std::variant<uint64_t, ProtocolError> address_field(const nlohmann::json& object, const std::string& key,
                                                    const std::string& where) {
  const auto value = object.find(key);
  if (value == object.end()) return invalid(where + "." + key + " is missing");
  if (value->is_number_unsigned() || (value->is_number_integer() && value->get<int64_t>() >= 0)) {
    return value->get<uint64_t>();
  }
  if (value->is_string()) {
    auto parsed = parse_u64(value->get<std::string>(), where + "." + key);
    if (!parsed) return invalid(parsed.error().message);
    return *parsed;
  }
  return invalid(where + "." + key + " must be a hex string or a non-negative integer");
}

std::variant<uint64_t, ProtocolError> positive_integer(const nlohmann::json& value, const std::string& what,
                                                       uint64_t max) {
  // JSON readers give non-negative integers as unsigned, C++ literals as signed.
  const bool positive = value.is_number_unsigned() ? value.get<uint64_t>() > 0
                                                   : value.is_number_integer() && value.get<int64_t>() > 0;
  if (!positive || value.get<uint64_t>() > max) {
    return invalid(what + " must be an integer from 1 to " + std::to_string(max));
  }
  return value.get<uint64_t>();
}

bool enabled_field(const nlohmann::json& object, bool& enabled) {
  const auto value = object.find("enabled");
  if (value == object.end()) return true;  // a breakpoint is enabled unless said otherwise
  if (!value->is_boolean()) return false;
  enabled = value->get<bool>();
  return true;
}

std::optional<ProtocolError> parse_here(const nlohmann::json& here, DebuggerContext& debugger) {
  if (!here.is_object()) return invalid("context.here must be an object {tid, pc, cfa[, sp, bp]}");
  HereFrame frame;
  const auto tid = here.find("tid");
  if (tid == here.end()) return invalid("context.here.tid is missing");
  auto tid_value = positive_integer(*tid, "context.here.tid", std::numeric_limits<int32_t>::max());
  if (auto* error = std::get_if<ProtocolError>(&tid_value)) return *error;
  frame.tid = static_cast<uint32_t>(std::get<uint64_t>(tid_value));
  for (auto [key, field] : {std::pair{"pc", &frame.pc}, std::pair{"cfa", &frame.cfa}}) {
    auto value = address_field(here, key, "context.here");
    if (auto* error = std::get_if<ProtocolError>(&value)) return *error;
    *field = std::get<uint64_t>(value);
  }
  // Optional: the frame's registers, for checking the CFA against the unwind rule.
  for (auto [key, field] : {std::pair{"sp", &frame.sp}, std::pair{"bp", &frame.bp}}) {
    if (!here.contains(key)) continue;
    auto value = address_field(here, key, "context.here");
    if (auto* error = std::get_if<ProtocolError>(&value)) return *error;
    *field = std::get<uint64_t>(value);
  }
  debugger.here = frame;
  return std::nullopt;
}

std::optional<ProtocolError> parse_breakpoints(const nlohmann::json& list, DebuggerContext& debugger) {
  if (!list.is_array()) return invalid("context.breakpoints must be an array");
  for (size_t index = 0; index < list.size(); ++index) {
    const nlohmann::json& entry = list[index];
    const std::string where = "context.breakpoints[" + std::to_string(index) + "]";
    if (!entry.is_object() || !entry.contains("id")) return invalid(where + " must be an object with an id");
    DebuggerBreakpoint breakpoint;
    auto id = positive_integer(entry["id"], where + ".id", std::numeric_limits<uint32_t>::max());
    if (auto* error = std::get_if<ProtocolError>(&id)) return *error;
    breakpoint.id = static_cast<uint32_t>(std::get<uint64_t>(id));
    if (!enabled_field(entry, breakpoint.enabled)) return invalid(where + ".enabled must be true or false");
    const auto locations = entry.find("locations");
    if (locations != entry.end() && !locations->is_array()) return invalid(where + ".locations must be an array");
    for (size_t at = 0; locations != entry.end() && at < locations->size(); ++at) {
      const nlohmann::json& spot = (*locations)[at];
      const std::string spot_where = where + ".locations[" + std::to_string(at) + "]";
      if (!spot.is_object()) return invalid(spot_where + " must be an object {id, address, enabled}");
      DebuggerBreakpointLocation location;
      if (const auto spot_id = spot.find("id"); spot_id != spot.end()) {
        if (spot_id->is_string()) location.id = spot_id->get<std::string>();
        else if (spot_id->is_number_integer()) location.id = spot_id->dump();
        else return invalid(spot_where + ".id must be a string or an integer");
      }
      auto address = address_field(spot, "address", spot_where);
      if (auto* error = std::get_if<ProtocolError>(&address)) return *error;
      location.address = std::get<uint64_t>(address);
      if (!enabled_field(spot, location.enabled)) return invalid(spot_where + ".enabled must be true or false");
      breakpoint.locations.push_back(std::move(location));
    }
    debugger.breakpoints.push_back(std::move(breakpoint));
  }
  return std::nullopt;
}

}  // namespace

std::variant<std::vector<std::string>, ProtocolError> parse_argv(const nlohmann::json& params) {
  const auto argv = params.find("argv");
  if (argv == params.end() || !argv->is_array() || argv->empty()) {
    return invalid("params.argv must be a non-empty array of strings (the user's words)");
  }
  std::vector<std::string> words;
  for (const auto& word : *argv) {
    if (!word.is_string()) return invalid("params.argv must hold strings only");
    words.push_back(word.get<std::string>());
  }
  return words;
}

std::variant<RequestContext, ProtocolError> parse_context(const nlohmann::json& params) {
  RequestContext context;
  const auto found = params.find("context");
  if (found == params.end() || found->is_null()) return context;
  const nlohmann::json& object = *found;
  if (!object.is_object()) return invalid("params.context must be an object");
  context.debugger.present = true;
  if (const auto pid = object.find("pid"); pid != object.end() && !pid->is_null()) {
    auto value = positive_integer(*pid, "context.pid", std::numeric_limits<int32_t>::max());
    if (auto* error = std::get_if<ProtocolError>(&value)) return *error;
    context.pid = static_cast<pid_t>(std::get<uint64_t>(value));
  }
  if (const auto executable = object.find("executable"); executable != object.end() && !executable->is_null()) {
    if (!executable->is_string()) return invalid("context.executable must be a path string");
    context.executable = executable->get<std::string>();
  }
  if (const auto used = object.find("debug_registers_used"); used != object.end() && !used->is_null()) {
    // x86 has 4; a debugger may count more than it can hold.
    const bool counted = used->is_number_unsigned() || (used->is_number_integer() && used->get<int64_t>() >= 0);
    if (!counted || used->get<uint64_t>() > 64) {
      return invalid("context.debug_registers_used must be an integer from 0 to 64");
    }
    context.debug_registers_used = used->get<uint32_t>();
  }
  if (const auto here = object.find("here"); here != object.end() && !here->is_null()) {
    if (auto error = parse_here(*here, context.debugger)) return *error;
  }
  if (const auto breakpoints = object.find("breakpoints"); breakpoints != object.end() && !breakpoints->is_null()) {
    if (auto error = parse_breakpoints(*breakpoints, context.debugger)) return *error;
  }
  return context;
}

std::variant<uint64_t, ProtocolError> parse_session_id(const nlohmann::json& params) {
  const auto session = params.find("session");
  if (session == params.end()) return invalid("params.session is missing");
  return positive_integer(*session, "params.session", std::numeric_limits<int64_t>::max());
}

std::variant<ReleaseRequest, ProtocolError> parse_release(const nlohmann::json& params) {
  ReleaseRequest release;
  auto session = parse_session_id(params);
  if (auto* error = std::get_if<ProtocolError>(&session)) return *error;
  release.session = std::get<uint64_t>(session);
  const auto addresses = params.find("addresses");
  if (addresses == params.end() || !addresses->is_array() || addresses->empty()) {
    return invalid("params.addresses must be a non-empty array of live addresses");
  }
  for (size_t at = 0; at < addresses->size(); ++at) {
    const nlohmann::json holder = {{"address", (*addresses)[at]}};
    auto value = address_field(holder, "address", "params.addresses[" + std::to_string(at) + "]");
    if (auto* error = std::get_if<ProtocolError>(&value)) return *error;
    release.addresses.push_back(std::get<uint64_t>(value));
  }
  const auto reason = params.find("reason");
  if (reason != params.end() && !reason->is_string()) return invalid("params.reason must be a string");
  release.reason = reason == params.end() ? "a debugger breakpoint" : reason->get<std::string>();
  if (release.reason.size() > 200) release.reason.resize(200);
  return release;
}

}  // namespace xref::serve
