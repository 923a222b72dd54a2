#include "output/json_envelope.h"

#include "hex.h"

namespace xref {

std::string hex_value(uint64_t value) { return to_hex(value); }

std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json process_json(const ProcessIdentity& identity, const std::string& binary_match) {
  return {
      {"pid", identity.pid},
      {"starttime_ticks", identity.starttime_ticks},
      {"comm", identity.comm},
      {"uid", identity.uid},
      {"exe_path", identity.exe_path},
      {"started_as", identity.started_as.empty() ? nlohmann::json(nullptr) : nlohmann::json(identity.started_as)},
      {"exe_deleted", identity.exe_deleted},
      {"exe_sha256", identity.exe_sha256},
      {"build_id", identity.build_id},
      {"binary_match", binary_match},
  };
}

nlohmann::json error_json(const Error& error) {
  nlohmann::json json = {
      {"code", error_code_name(error.code)},
      {"message", error.message},
      {"exit_status", error_exit_status(error.code)},
  };
  if (!error.hint.empty()) json["hint"] = error.hint;
  if (error.column > 0) json["column"] = error.column;
  return json;
}

nlohmann::json envelope_json(const Envelope& envelope) {
  nlohmann::json json = {
      {"schema_version", kSchemaVersion},
      {"tool", "xref"},
      {"tool_version", XREF_VERSION},
      {"operation", envelope.operation},
      {"process", envelope.process},
      {"data", envelope.data},
      {"error", envelope.error ? error_json(*envelope.error) : nlohmann::json(nullptr)},
      {"warnings", envelope.warnings},
      {"limits", envelope.limits},
      {"stops", envelope.stops},
  };
  return json;
}

}  // namespace xref
