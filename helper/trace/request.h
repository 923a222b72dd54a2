// What the user asked `xref trace` for, as typed (addresses and symbols not
// yet resolved). Filled by the CLI11 definitions in cmd_trace.cpp, from the
// shell or, through `xref serve` (docs/protocol.md), from a debugger front
// end, which also fills `debugger`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace xref {

// The selected thread and frame of a stopped debugger (`--here`).
struct HereFrame {
  uint32_t tid = 0;
  uint64_t pc = 0;   // live
  uint64_t cfa = 0;  // canonical frame address: the caller's sp after the return
  // The frame's rsp and rbp as the debugger unwound them, when it sent
  // them: the .eh_frame rule at pc recomputes the CFA from these.
  std::optional<uint64_t> sp;
  std::optional<uint64_t> bp;
};

struct DebuggerBreakpointLocation {
  std::string id;       // "1.1"
  uint64_t address = 0; // live
  bool enabled = true;
};

struct DebuggerBreakpoint {
  uint32_t id = 0;
  bool enabled = true;
  std::vector<DebuggerBreakpointLocation> locations;
};

// What only a debugger front end knows (docs/protocol.md, session.start
// context); empty when the request comes from the shell.
struct DebuggerContext {
  bool present = false;
  std::optional<HereFrame> here;
  std::vector<DebuggerBreakpoint> breakpoints;
};

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
  uint64_t max_events = 0;            // 0: unbounded
  uint64_t duration_ms = 0;           // 0: until another bound or Ctrl-C
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
