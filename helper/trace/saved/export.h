// `xref trace export --format chrome`: a saved trace as Chrome trace-event
// JSON (chrome://tracing, Perfetto), one track per thread.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "trace/saved/file.h"

namespace xref {

// {"traceEvents": [...]}: per window a "window N" complete ("X") slice, and
// inside it one "X" slice per call from its entry to its return (ts and dur
// in microseconds from timestamp_ns), nested by depth; entry fetches are the
// slice's args, return fetches args.return. A frame without a return (tail
// jump, unwinding, a window still open) ends at the event that closed it or
// at the window's end, with args.closed_by saying why. pid is the traced
// process's, tid the window's; one "M" thread_name event per thread.
nlohmann::json chrome_trace(const TraceFile& file);

// The same document written to `out` window by window (then a newline), so
// only one window is in memory at a time.
Result<void> write_chrome_trace(const SavedTrace& trace, std::ostream& out);

}  // namespace xref
