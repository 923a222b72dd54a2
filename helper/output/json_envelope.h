// The versioned envelope every --json document carries (docs/json.md):
// schema_version, tool, tool_version, operation, process identity, data or
// error, warnings, limits and stops. 64-bit values are hex strings.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "process_identity.h"
#include "result.h"

namespace xref {

constexpr int kSchemaVersion = 1;

struct Envelope {
  std::string operation;                   // "live_maps", "live_resolve", "live_memscan", "doctor"
  nlohmann::json process;                  // null when no process is involved
  nlohmann::json data;                     // null on error
  std::optional<Error> error;
  std::vector<std::string> warnings;
  nlohmann::json limits = nlohmann::json::object();
  std::vector<std::string> stops;          // why output ended early, if it did
};

nlohmann::json process_json(const ProcessIdentity& identity, const std::string& binary_match);
nlohmann::json error_json(const Error& error);
nlohmann::json envelope_json(const Envelope& envelope);

// "0x..." spelling for 64-bit values in JSON.
std::string hex_value(uint64_t value);

// A JSON value as xref prints it (documents, JSON lines, a mark in text):
// compact, with bytes that are not UTF-8 (a log line, a symbol name, a
// path) written as U+FFFD instead of failing the output.
std::string json_text(const nlohmann::json& value);

}  // namespace xref
