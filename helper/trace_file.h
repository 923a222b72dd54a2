// A saved trace (the output of `xref trace --json` or `--jsonl`) read back
// for the offline commands (trace export, trace diff): its windows and the
// traced process's identity. No process is involved.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "result.h"
#include "user_files.h"

namespace xref {

struct TraceFile {
  // The document's "process"; in a JSONL stream the summary line's, else
  // the header line's (null when neither is there).
  nlohmann::json process;
  std::vector<nlohmann::json> windows;  // the window objects of docs/trace.md, in file order
  nlohmann::json summary;               // the run's "summary" (null when a JSONL file has no summary line)
};

// Parses the text of a live_trace JSON document or of a JSONL stream.
// Errors (invalid_argument): not JSON, not an xref live_trace document, an
// unknown schema_version, a truncated or malformed JSONL line, no windows.
Result<TraceFile> parse_trace_file(const std::string& text);

// Reads and parses `path`, opened with the user's rights (user_files.h):
// file_error or permission_denied when it cannot be read. `identity`, when
// given, receives the device and inode of the file read.
Result<TraceFile> load_trace_file(const std::string& path, FileIdentity* identity = nullptr);

// A string field of a saved object (process, window, event, fetch): "" when
// the object has no such field or it is not a string.
std::string saved_text(const nlohmann::json& object, const char* key);

// The window whose window_id is `id`, or nullptr.
const nlohmann::json* window_with_id(const TraceFile& file, uint64_t id);

// A saved fetch's value as shown to people: signed_value (a number) for a
// signed fetch, the hex string otherwise, "<unreadable: ERROR>" when the
// read failed.
nlohmann::json saved_fetch_value(const nlohmann::json& fetch);

}  // namespace xref
