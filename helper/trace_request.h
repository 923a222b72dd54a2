// What the user asked `xref trace` for, as typed (addresses and symbols not
// yet resolved). Filled by cmd_trace.cpp; the same fields will come from the
// debugger front ends through the helper protocol.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace xref {

struct TraceRequest {
  std::string start;                  // function: symbol or static VA
  std::string start_filter;           // over the start fetches
  std::string fetch;                  // start probe fetch spec
  std::string stop;                   // VA that closes the window when hit
  std::string stop_return;            // function whose return closes it (default: start)
  std::vector<std::string> functions; // traced functions: symbols or static VAs
  std::string callees_of;             // trace the static callee tree of this function...
  int depth = 1;                      // ...to this depth, at call and return sites
  std::string all_calls_in;           // every call site in this function
  std::vector<std::pair<std::string, std::string>> fetch_at;   // VA -> spec, at entry
  std::vector<std::pair<std::string, std::string>> fetch_ret;  // VA -> spec, at return
  uint64_t max_windows = 0;           // 0: unbounded
  uint64_t max_events = 0;            // 0: unbounded
  uint64_t duration_ms = 0;           // 0: until another bound or Ctrl-C
  uint64_t ringbuf_bytes = 4u << 20;  // power of two, >= 4096 (tracefs: per CPU)
  std::string backend = "auto";       // auto, uprobe_multi, perf_uprobe, tracefs
  bool uretprobes = false;
};

}  // namespace xref
