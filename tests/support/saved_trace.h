// The smallest saved trace the offline commands (trace show, diff, export)
// accept: a `live_trace` document as `xref trace --json` writes it, with one
// window and no events.
#pragma once

#include <string>

namespace xref::test {

inline std::string one_window_trace() {
  return R"({"schema_version": 1, "operation": "live_trace", "process": {"pid": 42}, "windows": [)"
         R"({"window_id": 1, "tid": 5, "start_va": "0x1", "status": "complete", "events": []}]})";
}

}  // namespace xref::test
