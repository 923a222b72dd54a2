// A live trace's standard output, in its three shapes: text, JSON lines
// (--jsonl) and the live_trace document (--json). Every window goes out as
// it closes and is then let go, so memory holds the open windows only,
// whatever the shape: the document is written as it goes, its "windows"
// array first and the members only known at the end (summary, process
// after, error) after it. Each piece is written into a buffer of its own
// that the output queue then owns; one the reader is too slow for is
// counted (summary.windows_not_shown.output_stalled), never waited for.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "output/output_queue.h"
#include "result.h"
#include "trace/output.h"
#include "trace/session.h"
#include "trace/windows.h"

namespace xref {

enum class TraceFormat { text, json, jsonl };

class TraceStream {
 public:
  TraceStream(TraceRenderer& renderer, OutputQueue& output, TraceFormat format)
      : renderer_(renderer), output_(output), format_(format) {}

  // The probes are in: the text header, the JSON lines header, or the
  // document's opening members. `process`: the target's identity.
  void attached(const std::string& backend, const nlohmann::json& process);
  // A window that closed; it may be let go afterwards.
  void window_closed(const TraceWindow& window);
  // The windows the run still holds (open at the end, or ended with a lost
  // end record), then the summary, or the rest of the document.
  void finish(TraceRun& run, const std::optional<Error>& error);
  // The run failed after attached(): the document gets its error and ends.
  // False when there is no document to end (the caller reports the error).
  bool fail(const Error& error);

 private:
  // One window in the stream's shape; `droppable` while the trace runs
  // (refused when the reader is too slow: counted as output_stalled).
  void write_window(const TraceWindow& window, const TraceRun* run, bool droppable);
  // The document's members after "windows", and its end.
  std::string document_end(const nlohmann::json& members);

  TraceRenderer& renderer_;
  OutputQueue& output_;
  const TraceFormat format_;
  bool document_open_ = false;
  bool window_written_ = false;  // the document's array holds a window
  std::map<std::string, uint64_t> not_shown_;
};

}  // namespace xref
