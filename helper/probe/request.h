// What the user asked `xref probe` for, as typed (addresses not yet
// resolved). Filled by the CLI11 definitions in options.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sites/debugger_context.h"

namespace xref {

struct ProbeRequest {
  std::vector<std::string> addresses;  // sym, 0xVA, module:sym, module:0xVA (any instruction start), bp:N, a glob
  uint64_t max_addresses = 1000;       // functions one glob may match (sites/function_glob.h)
  std::string backend = "auto";        // auto, uprobe_multi, perf_uprobe, tracefs
  bool callers = false;                // the call sites each hit came from
  bool regs = false;                   // detail records carry every general register
  std::string fetch;                   // a fetch spec, read at every address
  std::string filter;                  // over the fetched names: only passing hits count as passed
  uint64_t every = 1;                  // every Nth passing hit of an address is sampled
  uint64_t first = 8;                  // the first N samples of an address are kept (0: no limit)
  uint64_t until_hits = 0;             // stop after N passing hits in all (0: no bound)
  uint64_t max_events = 4096;          // detail records kept in all (0: no bound)
  uint64_t duration_ms = 1000;         // 0: until a bound or Ctrl-C
  std::string group_by;                // ret, caller, tid or a fetched name
  std::string hist;                    // a fetched name: log2 histogram
  uint64_t stacks = 0;                 // count passing hits by user stack, up to this many frames (0: no stacks)
  uint64_t ringbuf_bytes = 1u << 20;   // tracefs: per CPU
  std::string stop_when;               // in a debugger: the first hit where this holds stops its thread
  uint64_t stop_skip = 0;              // ...after this many such hits went by
  uint64_t heartbeat_ms = 0;           // a progress line this often (0: none)
  std::string mark_file;               // a log followed during the probe...
  std::string mark_regex;              // ...whose latest matching line stamps samples and heartbeats
  bool allow_breakpoint_collision = false;  // in a debugger: probe enabled breakpoint locations anyway
  DebuggerContext debugger;               // in a debugger: bp:N addresses, the collision guard
};

}  // namespace xref
