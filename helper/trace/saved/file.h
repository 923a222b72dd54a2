// A saved trace (the output of `xref trace --json` or `--jsonl`) read back
// for the offline commands (trace show, diff, export): its windows and the
// traced process's identity. No process is involved.
//
// Saved traces are input from anywhere: they are opened through
// input_file.h (with the sudo user's rights under sudo, never blocking),
// only regular files are read (a FIFO, a device or a directory is refused
// before a byte is read), a file over the size cap is refused, and JSON
// nested deeper than kMaxJsonDepth is refused while it is parsed. Opening a trace reads it once, checking
// every window and noting where each one is; windows are then read back
// one at a time (a line of a JSON lines file, or an element of a document
// walked again), so memory follows the largest window, not the file.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "input/user_files.h"
#include "result.h"

namespace xref {

// Saved traces larger than this are refused unless XREF_MAX_TRACE_BYTES
// says otherwise.
constexpr uint64_t kDefaultMaxTraceBytes = uint64_t{1} << 30;
constexpr const char* kMaxTraceBytesVariable = "XREF_MAX_TRACE_BYTES";

// The cap in force: XREF_MAX_TRACE_BYTES (bytes, decimal or 0x hex) when
// set, else kDefaultMaxTraceBytes; invalid_argument for a value that is
// not a positive number.
Result<uint64_t> saved_trace_byte_cap();

struct TraceFile {
  // The document's "process"; in a JSONL stream the summary line's, else
  // the header line's (null when neither is there).
  nlohmann::json process;
  std::vector<nlohmann::json> windows;  // the window objects of docs/trace.md, in file order
  nlohmann::json summary;               // the run's "summary" (null when a JSONL file has no summary line)
};

// A check run on every window while a saved trace is opened (trace show
// checks the field types it reads), so an error comes before any output.
using SavedWindowCheck = std::function<Result<void>(const nlohmann::json& window, size_t index)>;

// Where a source's bytes come from: a file or, for tests, a string.
class TraceBytes;

class SavedTrace {
 public:
  // Opens and checks `path`. file_error: it cannot be opened or read, or it
  // is not a regular file; permission_denied: the user may not open it
  // (user_files.h); limit_exceeded: larger than `max_bytes`, or JSON
  // nested too deep; invalid_argument: not a live_trace document or stream
  // (as parse_trace_file), or `check` refused a window.
  static Result<SavedTrace> open(const std::string& path, const SavedWindowCheck& check = {});
  static Result<SavedTrace> open(const std::string& path, const SavedWindowCheck& check, uint64_t max_bytes);
  // The same over text in memory.
  static Result<SavedTrace> parse(std::string text, const SavedWindowCheck& check = {});

  const nlohmann::json& process() const { return process_; }
  const nlohmann::json& summary() const { return summary_; }
  size_t window_count() const { return window_ids_.size(); }
  // Each window's window_id in file order (nullopt when it has no integer one).
  const std::vector<std::optional<uint64_t>>& window_ids() const { return window_ids_; }
  // The first window whose window_id is `id`.
  std::optional<size_t> find_window(uint64_t id) const;
  // Reads back the windows `indices` (ascending) one at a time, each handed
  // to `visit` and dropped; stops at the first error, visit's or file_error
  // when the file changed since it was opened.
  using WindowVisit = std::function<Result<void>(size_t index, nlohmann::json&& window)>;
  Result<void> read_windows(const std::vector<size_t>& indices, const WindowVisit& visit) const;
  // 0, 1, ... window_count() - 1: every window, for read_windows.
  std::vector<size_t> every_window() const;
  // One window read back.
  Result<nlohmann::json> window(size_t index) const;
  // The device and inode of the file opened (nullopt for parsed text).
  const std::optional<FileIdentity>& identity() const { return identity_; }

 private:
  friend class SavedTraceReader;
  struct Span {
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  std::shared_ptr<const TraceBytes> bytes_;
  std::optional<FileIdentity> identity_;
  uint64_t cap_ = 0;  // bytes read at most
  nlohmann::json process_;
  nlohmann::json summary_;
  std::vector<std::optional<uint64_t>> window_ids_;
  std::vector<Span> window_lines_;  // a JSONL stream: where each window's line is
  bool document_ = false;           // a JSON document, walked again to read windows back
};

// Parses the text of a live_trace JSON document or of a JSONL stream.
// Errors (invalid_argument): not JSON, not an xref live_trace document, an
// unknown schema_version, a truncated or malformed JSONL line, no windows;
// limit_exceeded: JSON nested too deep.
Result<TraceFile> parse_trace_file(const std::string& text);

// Reads and parses `path`, every window in memory (SavedTrace::open's errors).
Result<TraceFile> load_trace_file(const std::string& path);

// A string field of a saved object (process, window, event, fetch): "" when
// the object has no such field or it is not a string.
std::string saved_text(const nlohmann::json& object, const char* key);

// The window whose window_id is `id`, or nullptr.
const nlohmann::json* window_with_id(const TraceFile& file, uint64_t id);

// "1, 2, 3, ..." : the first window ids of a file, for a hint.
std::string window_ids_text(const std::vector<std::optional<uint64_t>>& ids);

// A saved fetch's value as shown to people: signed_value (a number) for a
// signed fetch, the hex string otherwise, a :string fetch's text as trace
// shows it ("\"set\"", "\"xxx…\" (cut at 64 bytes)"), "<unreadable: ERROR>"
// when the read failed.
nlohmann::json saved_fetch_value(const nlohmann::json& fetch);

// What is wrong with a saved :string fetch ({name type string length
// truncated}), "" when nothing is: its string longer than 256 bytes can be
// written (U+FFFD for each at worst), a length past 256, or a truncated that
// is not true or false. Any other fetch: "". A saved file cannot make one
// value any size.
std::string saved_string_fetch_problem(const nlohmann::json& fetch);

}  // namespace xref
