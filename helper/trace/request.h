// What the user asked `xref trace` for, as typed (addresses and symbols not
// yet resolved). Filled by the CLI11 definitions in cmd_trace.cpp, from the
// shell or, through `xref serve` (docs/protocol.md), from a debugger front
// end, which also fills `debugger`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sites/debugger_context.h"

namespace xref {

struct TraceRequest {
  std::string start;                  // function: symbol or static VA
  std::string start_filter;           // over the start fetches
  std::string fetch;                  // start probe fetch spec
  std::string stop;                   // VA that closes the window when hit
  std::string stop_return;            // function whose return closes it (default: start)
  std::vector<std::string> functions; // traced functions: symbols or static VAs
  std::string callees_of;             // trace the static callee tree of this function...
  int depth = 0;                      // ...to this depth (0: 1, or 2 with --here), at call and return sites
  std::string all_calls_in;           // every call site in this function
  std::vector<std::pair<std::string, std::string>> fetch_at;   // VA -> spec, at entry
  std::vector<std::pair<std::string, std::string>> fetch_ret;  // VA -> spec, at return
  uint64_t max_windows = 0;           // 0: unbounded
  uint64_t max_functions = 1000;      // functions one --functions glob may match (sites/function_glob.h)
  uint64_t max_events = 0;            // 0: unbounded
  uint64_t duration_ms = 0;           // 0: until another bound or Ctrl-C
  uint64_t heartbeat_ms = 0;          // a progress line this often (0: none)
  uint64_t ringbuf_bytes = 4u << 20;  // power of two, >= 4096 (tracefs: per CPU)
  std::string backend = "auto";       // auto, uprobe_multi, perf_uprobe, tracefs
  bool uretprobes = false;
  bool here = false;                  // open a window on the debugger's stopped thread now
  bool stop_at_end = false;           // --here: the front end stops the process when it closes
  bool allow_breakpoint_collision = false;
  std::string mark_file;              // a log followed during the trace...
  std::string mark_regex;             // ...whose latest line matching this stamps each window
  DebuggerContext debugger;
};

}  // namespace xref
